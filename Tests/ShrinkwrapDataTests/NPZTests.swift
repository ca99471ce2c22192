import Foundation
@testable import ShrinkwrapData
import ShrinkwrapIR
import ShrinkwrapTestSupport
import XCTest

final class NPZTests: XCTestCase {
    func testReadsCommittedFixtures() throws {
        let stored = try NPZ.read(fixtures.appendingPathComponent("stored.npz"))
        XCTAssertEqual(stored.map(\.name), ["x", "ids"])
        XCTAssertEqual(stored[0].tensor, Tensor([1.5, -2, 3.25], shape: [1, 3]))
        XCTAssertEqual(stored[1].tensor, Tensor(ints: [3, 1, 4, 1], shape: [1, 4]))

        let compressed = try NPZ.read(fixtures.appendingPathComponent("compressed.npz"))
        XCTAssertEqual(compressed.map(\.name), ["x", "ids"])
        XCTAssertEqual(compressed[0].tensor.dtype, .float64)
        XCTAssertEqual(compressed[0].tensor.shape, [16, 16])
        XCTAssertEqual(compressed[0].tensor.floats, (0..<256).map { Float($0) / 8 })
        XCTAssertEqual(compressed[1].tensor, Tensor(ints: (0..<16).map { Int64($0 % 5) }, shape: [1, 16], dtype: .int32))
    }

    func testZip64RecordsAndComments() throws {
        let a = NPY.encode(Tensor([1, 2], shape: [2])), b = NPY.encode(Tensor(ints: [7], shape: [1]))
        let members: [(name: String, data: [UInt8])] = [("a.npy", [UInt8](a)), ("b.npy", [UInt8](b))]
        for zip64 in [false, true] {
            for comment in [[], Array("a comment with PK\u{5}\u{6} inside".utf8), [UInt8](repeating: 0x20, count: 65535)] {
                let z = makeZip(members, zip64: zip64, comment: comment)
                let got = try NPZ.decode(z, file: "z.npz")
                XCTAssertEqual(got.map(\.name), ["a", "b"])
                XCTAssertEqual(got[0].tensor, Tensor([1, 2], shape: [2]))
                XCTAssertEqual(got[1].tensor, Tensor(ints: [7], shape: [1]))
            }
        }
        // A ZIP64 archive whose locator is missing.
        var z = makeZip(members, zip64: true)
        let locator = z.count - 22 - 20
        z[locator] = 0
        XCTAssertTrue(errorText { _ = try NPZ.decode(z, file: "z.npz") }.contains("locator"))
    }

    func testDamagedArchivesGiveClearErrors() throws {
        let good = [UInt8](try Data(contentsOf: fixtures.appendingPathComponent("stored.npz")))
        func reason(_ b: [UInt8]) -> String { errorText { _ = try NPZ.decode(b, file: "d.npz") } }

        XCTAssertTrue(reason([]).contains("not a ZIP archive"))
        XCTAssertTrue(reason(Array("definitely not a zip file, just some text here".utf8)).contains("not a ZIP archive"))
        XCTAssertTrue(reason(Array(good[0..<200])).contains("d.npz: truncated or damaged ZIP archive"), reason(Array(good[0..<200])))

        // A flipped data byte: the CRC names the member.
        var flipped = good
        flipped[150] ^= 0x01
        let crc = reason(flipped)
        XCTAssertTrue(crc.contains("d.npz: member 'x.npy'") || crc.contains("d.npz: member 'ids.npy'"), crc)
        XCTAssertTrue(crc.contains("CRC-32 mismatch"), crc)

        // Central directory offset beyond the file.
        var far = good
        let eocd = far.count - 22
        far[eocd + 16] = 0xFF; far[eocd + 17] = 0xFF; far[eocd + 18] = 0xFF; far[eocd + 19] = 0x7F
        XCTAssertTrue(reason(far).contains("runs past the end of the file"), reason(far))

        // An entry count the directory cannot hold.
        var many = good
        many[eocd + 8] = 0xF0; many[eocd + 10] = 0xF0
        XCTAssertTrue(reason(many).contains("claims"), reason(many))

        // A huge compressed size in the central directory.
        var huge = good
        let cd = NPZ.u32(good, eocd + 16)
        huge[cd + 20] = 0xFE; huge[cd + 21] = 0xFF; huge[cd + 22] = 0xFF; huge[cd + 23] = 0x7F
        XCTAssertTrue(reason(huge).contains("member 'x.npy'"), reason(huge))

        // An unsupported compression method.
        var bzip = good
        bzip[cd + 10] = 12
        XCTAssertTrue(reason(bzip).contains("compression method 12"), reason(bzip))

        // A member that is not a .npy.
        let txt = makeZip([("notes.txt", Array("hi".utf8))])
        XCTAssertTrue(reason(txt).contains("member 'notes.txt': not a .npy member"), reason(txt))

        // A .npy member whose content is not a .npy.
        let junk = makeZip([("x.npy", Array("hi".utf8))])
        XCTAssertTrue(reason(junk).contains("member 'x.npy': not a .npy file"), reason(junk))

        // The same name twice.
        let npy = [UInt8](NPY.encode(Tensor([1], shape: [1])))
        let twice = makeZip([("x.npy", npy), ("x.npy", npy)])
        XCTAssertTrue(reason(twice).contains("appears twice"), reason(twice))
    }

    func testCorruptedDeflateArchive() throws {
        let good = [UInt8](try Data(contentsOf: fixtures.appendingPathComponent("compressed.npz")))
        // Damage the first member's deflate data (it starts after the 30-byte header, the name and a ZIP64 extra).
        var bad = good
        let start = 30 + NPZ.u16(good, 26) + NPZ.u16(good, 28)
        for i in start..<(start + 40) { bad[i] = 0xFF }
        let text = errorText { _ = try NPZ.decode(bad, file: "c.npz") }
        XCTAssertTrue(text.contains("c.npz: member 'x.npy'"), text)
    }

    /// Every truncation and random byte damage of both fixtures throws or reads; nothing crashes.
    func testTruncatedAndRandomlyDamagedArchivesNeverCrash() throws {
        for name in ["stored.npz", "compressed.npz"] {
            let good = [UInt8](try Data(contentsOf: fixtures.appendingPathComponent(name)))
            for n in 0..<good.count {
                XCTAssertThrowsError(try NPZ.decode(Array(good[0..<n]), file: name), "prefix \(n)")
            }
            var rng = TestRNG(state: 99)
            for _ in 0..<1500 {
                var b = good
                for _ in 0..<(1 + rng.below(3)) { b[rng.below(b.count)] = UInt8(truncatingIfNeeded: rng.next()) }
                _ = try? NPZ.decode(b, file: name)
            }
        }
    }

    /// np.savez and np.savez_compressed of every dtype numpy and NPY share, compared with np.save of the same arrays.
    func testMatchesNumpy() throws {
        try requirePython()
        let dir = try makeTempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        try runPython("""
            import numpy as np, zipfile
            rng = np.random.default_rng(3)
            arrays = {
              "f32": rng.standard_normal((3, 5)).astype(np.float32),
              "f16": rng.standard_normal((4,)).astype(np.float16),
              "f64": rng.standard_normal((2, 2, 2)),
              "i8": np.array([-128, 0, 127], dtype=np.int8),
              "u8": np.arange(200, dtype=np.uint8),
              "i16": np.array([[-3000, 3000]], dtype=np.int16),
              "u16": np.array([65535], dtype=np.uint16),
              "i32": np.array([-70000, 1], dtype=np.int32),
              "u32": np.array([4000000000], dtype=np.uint32),
              "i64": np.array([-(2**62), 2**62], dtype=np.int64),
              "boolean": np.array([True, False, True]),
              "scalar": np.float32(2.5),
              "empty": np.zeros((0, 4), dtype=np.float32),
              "big": rng.standard_normal((120, 250)).astype(np.float32),
              "unicode_\u{e9}": np.array([1.0], dtype=np.float32),
            }
            np.savez("plain.npz", **arrays)
            np.savez_compressed("packed.npz", **arrays)
            for k, v in arrays.items():
                np.save(k + ".npy", v)
            with zipfile.ZipFile("plain.npz", "a") as z:
                z.comment = b"appended comment"
            open("names.txt", "w", encoding="utf-8").write("\\n".join(arrays))
            """, in: dir)
        let names = try String(contentsOf: dir.appendingPathComponent("names.txt"), encoding: .utf8).split(separator: "\n").map(String.init)
        XCTAssertEqual(names.count, 15)
        for archive in ["plain.npz", "packed.npz"] {
            let members = try NPZ.read(dir.appendingPathComponent(archive))
            XCTAssertEqual(members.map(\.name), names, archive)
            for (name, tensor) in members {
                let expected = try NPY.read(dir.appendingPathComponent(name + ".npy"))
                XCTAssertEqual(tensor, expected, "\(archive) \(name)")
            }
        }
    }
}
