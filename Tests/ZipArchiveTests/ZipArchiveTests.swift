import Foundation
import ShrinkwrapTestSupport
import XCTest
import ZipArchive

final class ZipArchiveTests: XCTestCase {
    let members: [(name: String, data: [UInt8])] = [
        ("labels.txt", Array("cat\ndog\n".utf8)),
        ("empty.bin", []),
        ("dir/ünïcode name.txt", Array("é\u{0}\u{1}".utf8)),
        ("binary", (0..<300).map { UInt8($0 % 256) }),
    ]

    func testWriterThenReaderRoundTrip() throws {
        let zip = try ZipWriter.stored(members)
        XCTAssertEqual(try ZipWriter.stored(members), zip, "same input, same bytes")
        let archive = try ZipArchive(bytes: zip, file: "a.zip")
        XCTAssertEqual(archive.offsetBase, 0)
        XCTAssertEqual(archive.entries.map(\.name), members.map(\.name), "members in the order given")
        for m in members {
            XCTAssertEqual(try archive.contents(ofMember: m.name), m.data, m.name)
        }
        XCTAssertEqual(archive.entries.map(\.method), [0, 0, 0, 0])
        XCTAssertEqual(archive.entries.map(\.flags), [0, 0, 0x800, 0], "the UTF-8 flag only on the non-ASCII name")
        // Fixed DOS date 1980-01-01 (0x0021) and time 0 in the first local header.
        XCTAssertEqual(Array(zip[10..<14]), [0, 0, 0x21, 0])
    }

    /// Appended after other bytes: offsets from the file's start (MetadataPopulator) or from the archive's (cat a b).
    func testArchiveAfterOtherBytes() throws {
        let prefix = [UInt8](repeating: 0xAB, count: 1234)
        let absolute = prefix + (try ZipWriter.stored(members, offsetBase: prefix.count))
        let relative = prefix + (try ZipWriter.stored(members))
        for (bytes, base) in [(absolute, 0), (relative, prefix.count)] {
            let archive = try ZipArchive(bytes: bytes, file: "m.tflite")
            XCTAssertEqual(archive.offsetBase, base)
            XCTAssertEqual(archive.entries.map(\.localHeaderOffset).first, prefix.count)
            for m in members { XCTAssertEqual(try archive.contents(ofMember: m.name), m.data) }
        }
        XCTAssertTrue(ZipArchive.hasEndRecord(absolute))
        XCTAssertFalse(ZipArchive.hasEndRecord(prefix))
    }

    func testWriterRefusesBadNames() {
        for (name, needle) in [("", "not a relative member name"), ("/abs", "not a relative member name"), ("a/../b", "not a relative member name"),
                               ("a\\b", "not a relative member name"), ("a\nb", "not a relative member name")] {
            let text = errorText { _ = try ZipWriter.stored([(name, [1])], file: "w.zip") }
            XCTAssertTrue(text.hasPrefix("w.zip: member '") && text.contains(needle) && !text.contains("\n"), text)
        }
        XCTAssertEqual(errorText { _ = try ZipWriter.stored([("a", []), ("a", [1])], file: "w.zip") }, "w.zip: member 'a': given twice")
        XCTAssertTrue(errorText { _ = try ZipWriter.stored([("a", [])], offsetBase: -1) }.contains("offset base -1"))
    }

    func testReaderErrorsNameFileAndMember() throws {
        let zip = try ZipWriter.stored(members)
        func reason(_ b: [UInt8]) -> String { errorText { _ = try ZipArchive(bytes: b, file: "z.zip") } }
        XCTAssertEqual(reason([]), "z.zip: not a ZIP archive (too short)")
        XCTAssertEqual(reason(Array(repeating: 7, count: 100)), "z.zip: not a ZIP archive (no end of central directory record)")
        XCTAssertEqual(reason(Array(zip.prefix(60))), "z.zip: truncated or damaged ZIP archive (no end of central directory record)")
        let eocd = zip.count - 22
        let cdOffset = ZipArchive.u32(zip, eocd + 16)
        var bad = zip
        bad[cdOffset] = 0
        XCTAssertEqual(reason(bad), "z.zip: central directory entry 0 has a bad signature")
        bad = zip
        bad[eocd + 10] = 200; bad[eocd + 8] = 200
        XCTAssertTrue(reason(bad).contains("claims 200 entries"), reason(bad))
        bad = zip
        bad[eocd + 16] = 0xFF; bad[eocd + 17] = 0xFF; bad[eocd + 18] = 0xFF
        XCTAssertTrue(reason(bad).contains("runs past the end of the file"), reason(bad))

        // Member-level errors come from contents(of:).
        func memberError(_ b: [UInt8], _ name: String) -> String {
            errorText { _ = try ZipArchive(bytes: b, file: "z.zip").contents(ofMember: name) }
        }
        XCTAssertEqual(memberError(zip, "nope.txt"),
                       "z.zip: member 'nope.txt': not in the archive (it has 'labels.txt', 'empty.bin', 'dir/ünïcode name.txt', 'binary')")
        bad = zip
        bad[30 + 10 + 2] ^= 1  // a data byte of labels.txt
        XCTAssertTrue(memberError(bad, "labels.txt").hasPrefix("z.zip: member 'labels.txt': CRC-32 mismatch (stored "), memberError(bad, "labels.txt"))
        bad = zip
        bad[30] = UInt8(ascii: "L")  // the local header's name
        XCTAssertEqual(memberError(bad, "labels.txt"), "z.zip: member 'labels.txt': local header at offset 0 names a different member")
        bad = zip
        bad[cdOffset + 10] = 12  // method in the central entry
        XCTAssertEqual(memberError(bad, "labels.txt"), "z.zip: member 'labels.txt': compression method 12 is not supported (only stored and deflate)")
        bad = zip
        bad[cdOffset + 8] = 1  // encrypted
        XCTAssertEqual(memberError(bad, "labels.txt"), "z.zip: member 'labels.txt': encrypted members are not supported")
        bad = zip
        bad[cdOffset + 42] = 0xF0; bad[cdOffset + 43] = 0xFF  // local header offset
        XCTAssertTrue(memberError(bad, "labels.txt").contains("runs past the end of the file"), memberError(bad, "labels.txt"))
        bad = zip
        bad[cdOffset + 20] = 0xFF; bad[cdOffset + 21] = 0xFF; bad[cdOffset + 22] = 0xFF  // compressed size
        XCTAssertTrue(memberError(bad, "labels.txt").contains("runs past the end of the file"), memberError(bad, "labels.txt"))
        let small = try ZipArchive(bytes: zip, file: "z.zip", memberLimit: 100)
        XCTAssertEqual(errorText { _ = try small.contents(ofMember: "binary") },
                       "z.zip: member 'binary': uncompressed size 300 bytes is over the limit of 100 bytes")
        // A name with a newline stays on one line.
        let odd = try ZipWriter.stored([("ok", [1])])
        var renamed = odd
        renamed[renamed.count - 22 - 2] = 0x0A  // the central entry's name "ok" → "\nk"
        XCTAssertTrue(errorText { _ = try ZipArchive(bytes: renamed, file: "z.zip").contents(ofMember: "\nk") }.contains("member '\\nk'"))
    }

    /// Every truncation and random damage of a written archive throws or reads; nothing crashes.
    func testTruncatedAndDamagedArchivesNeverCrash() throws {
        let zip = try ZipWriter.stored(members, offsetBase: 0)
        func readAll(_ b: [UInt8]) throws {
            let a = try ZipArchive(bytes: b, file: "d.zip")
            for e in a.entries { _ = try a.contents(of: e) }
        }
        for n in 0..<zip.count {
            XCTAssertThrowsError(try readAll(Array(zip[0..<n])), "prefix \(n)")
        }
        var rng = TestRNG(state: 11)
        var failed = 0
        for _ in 0..<5000 {
            var b = zip
            for _ in 0..<(1 + rng.below(3)) { b[rng.below(b.count)] = UInt8(truncatingIfNeeded: rng.next()) }
            do { try readAll(b) } catch { failed += 1; XCTAssertFalse("\(error)".contains("\n")) }
        }
        XCTAssertGreaterThan(failed, 1000)
    }

    /// Python's zipfile reads what the writer writes (alone and appended to other bytes), and we read what zipfile
    /// writes: stored, deflate, forced ZIP64, and an archive appended to a non-ZIP file in append mode.
    func testPythonZipfileAgrees() throws {
        try requirePython()
        let dir = try makeTempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        try Data(try ZipWriter.stored(members)).write(to: dir.appendingPathComponent("ours.zip"))
        let prefix = [UInt8](repeating: 0x54, count: 777)
        try Data(prefix + (try ZipWriter.stored(members, offsetBase: prefix.count))).write(to: dir.appendingPathComponent("ours-appended.bin"))
        try runPython("""
            import json, zipfile
            report = {}
            for name in ["ours.zip", "ours-appended.bin"]:
                with zipfile.ZipFile(name) as z:
                    assert z.testzip() is None, name
                    report[name] = [[i.filename, list(i.date_time), i.compress_type, z.read(i).hex()] for i in z.infolist()]
            json.dump(report, open("report.json", "w"))
            data = {"stored.txt": b"stored text\\n", "deflated.txt": b"deflate me " * 500, "empty": b""}
            with zipfile.ZipFile("py.zip", "w") as z:
                z.writestr("stored.txt", data["stored.txt"], zipfile.ZIP_STORED)
                z.writestr("deflated.txt", data["deflated.txt"], zipfile.ZIP_DEFLATED)
                z.writestr("empty", data["empty"])
            with zipfile.ZipFile("py64.zip", "w") as z:
                for k, v in data.items():
                    with z.open(k, "w", force_zip64=True) as f:
                        f.write(v)
            open("model.bin", "wb").write(b"\\x1c\\x00\\x00\\x00TFL3" + bytes(500))
            with zipfile.ZipFile("model.bin", "a") as z:
                for k, v in data.items():
                    z.writestr(k, v)
            for k, v in data.items():
                open("plain-" + k, "wb").write(v)
            """, in: dir)
        let report = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(contentsOf: dir.appendingPathComponent("report.json"))) as? [String: [[Any]]])
        for name in ["ours.zip", "ours-appended.bin"] {
            let entries = try XCTUnwrap(report[name])
            XCTAssertEqual(entries.map { $0[0] as? String }, members.map(\.name), name)
            XCTAssertEqual(entries.map { $0[1] as? [Int] }, Array(repeating: [1980, 1, 1, 0, 0, 0], count: members.count), name)
            XCTAssertEqual(entries.map { $0[2] as? Int }, Array(repeating: 0, count: members.count), name)
            XCTAssertEqual(entries.map { $0[3] as? String }, members.map { $0.data.map { String(format: "%02x", $0) }.joined() }, name)
        }
        for name in ["py.zip", "py64.zip", "model.bin"] {
            let archive = try ZipArchive(bytes: [UInt8](try Data(contentsOf: dir.appendingPathComponent(name))), file: name)
            XCTAssertEqual(archive.entries.map(\.name), ["stored.txt", "deflated.txt", "empty"], name)
            for e in archive.entries {
                let want = [UInt8](try Data(contentsOf: dir.appendingPathComponent("plain-" + e.name)))
                XCTAssertEqual(try archive.contents(of: e), want, "\(name) \(e.name)")
            }
        }
    }
}
