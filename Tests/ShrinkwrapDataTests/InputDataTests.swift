import Foundation
@testable import ShrinkwrapData
import ShrinkwrapIR
import ShrinkwrapTestSupport
import XCTest

final class InputDataTests: XCTestCase {
    var dir = FileManager.default.temporaryDirectory

    override func setUpWithError() throws { dir = try makeTempDir() }
    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: dir) }

    func graph(_ inputs: ValueInfo...) -> Graph { Graph(inputs: inputs) }

    func save(_ t: Tensor, _ path: String) throws {
        let url = dir.appendingPathComponent(path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try NPY.encode(t).write(to: url)
    }

    func path(_ p: String) -> String { dir.appendingPathComponent(p).path }

    // Folders, order, sources and description.

    func testFolderOfNpyFilesInSortedOrder() throws {
        let g = graph(ValueInfo(name: "x", dtype: .float32, shape: [.fixed(1), .fixed(2)]))
        for (i, name) in ["b.npy", "a.npy", "c10.npy", "c2.npy"].enumerated() {
            try save(Tensor([Float(i), 0], shape: [1, 2]), "data/\(name)")
        }
        try Data("ignore me".utf8).write(to: dir.appendingPathComponent("data/README.txt"))
        try Data("hidden".utf8).write(to: dir.appendingPathComponent("data/.DS_Store"))
        let set = try InputData.load([path("data")], graph: g)
        XCTAssertEqual(set.samples.count, 4)
        XCTAssertEqual(set.sources.map { URL(fileURLWithPath: $0).lastPathComponent }, ["a.npy", "b.npy", "c10.npy", "c2.npy"])
        XCTAssertEqual(set.samples.map { $0["x"]?.floats?[0] }, [1, 0, 2, 3])
        XCTAssertEqual(set.description, "4 .npy files in \(path("data"))/")
        XCTAssertFalse(set.random)
        XCTAssertEqual(set.sha256.count, 64)
        // Same data → same hash; the hash is over content, not paths.
        try FileManager.default.copyItem(at: dir.appendingPathComponent("data"), to: dir.appendingPathComponent("copy"))
        XCTAssertEqual(try InputData.load([path("copy") + "/"], graph: g).sha256, set.sha256)
    }

    func testSeveralSpecsKeepTheirOrder() throws {
        let g = graph(ValueInfo(name: "x", dtype: .float32, shape: [.fixed(2)]))
        try save(Tensor([1, 1], shape: [2]), "one.npy")
        try save(Tensor([2, 2, 3, 3], shape: [2, 2]), "two.npy")
        let set = try InputData.load([path("two.npy"), path("one.npy")], graph: g)
        XCTAssertEqual(set.samples.map { $0["x"]?.floats ?? [] }, [[2, 2], [3, 3], [1, 1]])
        XCTAssertEqual(set.sources, [path("two.npy") + "[0]", path("two.npy") + "[1]", path("one.npy")])
        XCTAssertTrue(set.description.hasPrefix("3 samples from 2 files"), set.description)
    }

    // Batch axes.

    func testBatchAxisSplitsIntoSamples() throws {
        let batch = fixtures.appendingPathComponent("batch.npy").path
        // [2, 3] for an input [3]: one more leading axis.
        var set = try InputData.load([batch], graph: graph(ValueInfo(name: "x", dtype: .float32, shape: [.fixed(3)])))
        XCTAssertEqual(set.samples.map { $0["x"] }, [Tensor([0, 0.5, 1], shape: [3]), Tensor([1.5, 2, 2.5], shape: [3])])
        XCTAssertEqual(set.sources, [batch + "[0]", batch + "[1]"])
        XCTAssertEqual(set.description, "\(batch) (2 samples)")
        // [2, 3] for an input [1, 3]: the leading 1 becomes N.
        set = try InputData.load([batch], graph: graph(ValueInfo(name: "x", dtype: .float32, shape: [.fixed(1), .fixed(3)])))
        XCTAssertEqual(set.samples.map { $0["x"] }, [Tensor([0, 0.5, 1], shape: [1, 3]), Tensor([1.5, 2, 2.5], shape: [1, 3])])
        // [2, 3] for an input [2, 3] or [batch, 3]: one sample.
        for dims: [Dim] in [[.fixed(2), .fixed(3)], [.symbolic("batch"), .fixed(3)], [.unknown, .symbolic("n")]] {
            set = try InputData.load([batch], graph: graph(ValueInfo(name: "x", dtype: .float32, shape: dims)))
            XCTAssertEqual(set.samples.count, 1)
            XCTAssertEqual(set.sources, [batch])
        }
        // [2, 3] for an input [batch]: rank + 1 with a symbolic dim splits.
        set = try InputData.load([batch], graph: graph(ValueInfo(name: "x", dtype: .float32, shape: [.symbolic("n")])))
        XCTAssertEqual(set.samples.count, 2)
        // Unknown rank: the file is one sample as it is.
        set = try InputData.load([batch], graph: graph(ValueInfo(name: "x", dtype: nil, shape: nil)))
        XCTAssertEqual(set.samples.count, 1)
    }

    func testWrongShapeAndEmptyBatch() throws {
        let batch = fixtures.appendingPathComponent("batch.npy").path
        let g = graph(ValueInfo(name: "x", dtype: .float32, shape: [.fixed(1), .fixed(4)]))
        let text = errorText { _ = try InputData.load([batch], graph: g) }
        XCTAssertEqual(text, "\(batch): shape [2, 3] does not fit input 'x' [1, 4] (nor a batch [N, 4])")
        try save(Tensor([], shape: [0, 3]), "empty.npy")
        let empty = errorText { _ = try InputData.load([path("empty.npy")], graph: graph(ValueInfo(name: "x", dtype: .float32, shape: [.fixed(3)]))) }
        XCTAssertTrue(empty.contains("empty.npy: the batch axis of shape [0, 3] holds no samples"), empty)
        let rank = errorText { _ = try InputData.load([batch], graph: graph(ValueInfo(name: "x", dtype: .float32, shape: [.fixed(1), .fixed(1), .fixed(1), .fixed(3)]))) }
        XCTAssertTrue(rank.contains("does not fit input 'x' [1, 1, 1, 3]"), rank)
    }

    // Dtypes.

    func testDtypeConversions() throws {
        let compressed = fixtures.appendingPathComponent("compressed.npz").path
        // float64 → float32 and int32 → int64.
        let g = graph(ValueInfo(name: "ids", dtype: .int64, shape: [.fixed(1), .fixed(16)]),
                      ValueInfo(name: "x", dtype: .float32, shape: [.symbolic("n"), .fixed(16)]))
        let set = try InputData.load([compressed], graph: g)
        XCTAssertEqual(set.samples.count, 1)
        XCTAssertEqual(set.samples[0]["x"]?.dtype, .float32)
        XCTAssertEqual(set.samples[0]["x"]?.floats, (0..<256).map { Float($0) / 8 })
        XCTAssertEqual(set.samples[0]["ids"], Tensor(ints: (0..<16).map { Int64($0 % 5) }, shape: [1, 16], dtype: .int64))
        XCTAssertEqual(set.description, compressed)

        // int64 → int32 when it fits, an error when it does not.
        let i32 = graph(ValueInfo(name: "t", dtype: .int32, shape: [.fixed(2)]))
        try save(Tensor(ints: [5, -6], shape: [2], dtype: .int64), "ok.npy")
        XCTAssertEqual(try InputData.load([path("ok.npy")], graph: i32).samples[0]["t"], Tensor(ints: [5, -6], shape: [2], dtype: .int32))
        try save(Tensor(ints: [5, 1 << 40], shape: [2], dtype: .int64), "big.npy")
        let big = errorText { _ = try InputData.load([path("big.npy")], graph: i32) }
        XCTAssertTrue(big.contains("big.npy: value 1099511627776 at index 1 does not fit input 't' (int32)"), big)

        // Anything else is refused.
        try save(Tensor([1, 2], shape: [2]), "f.npy")
        let wrong = errorText { _ = try InputData.load([path("f.npy")], graph: i32) }
        XCTAssertTrue(wrong.contains("f.npy: dtype float32 does not match input 't' (int32)"), wrong)
        let f16 = errorText { _ = try InputData.load([path("f.npy")], graph: graph(ValueInfo(name: "h", dtype: .float16, shape: [.fixed(2)]))) }
        XCTAssertTrue(f16.contains("dtype float32 does not match input 'h' (float16)"), f16)
        // float16 values widen exactly to a float32 input.
        try save(Tensor([0.5, -2], shape: [2], dtype: .float16), "h.npy")
        let widened = try InputData.load([path("h.npy")], graph: graph(ValueInfo(name: "x", dtype: .float32, shape: [.fixed(2)]))).samples[0]["x"]
        XCTAssertEqual(widened, Tensor([0.5, -2], shape: [2]))
    }

    // .npz.

    func testNpzForAMultiInputModel() throws {
        let stored = fixtures.appendingPathComponent("stored.npz").path
        let g = graph(ValueInfo(name: "x", dtype: .float32, shape: [.fixed(1), .fixed(3)]),
                      ValueInfo(name: "ids", dtype: .int64, shape: [.fixed(1), .symbolic("seq")]))
        let set = try InputData.load([stored], graph: g)
        XCTAssertEqual(set.samples.count, 1)
        XCTAssertEqual(set.samples[0]["x"], Tensor([1.5, -2, 3.25], shape: [1, 3]))
        XCTAssertEqual(set.samples[0]["ids"], Tensor(ints: [3, 1, 4, 1], shape: [1, 4]))
        XCTAssertEqual(set.sources, [stored])

        // A folder of both fixtures plus a .npy: the .npy is refused for a two-input model.
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("mixed"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: stored, toPath: path("mixed/a.npz"))
        try save(Tensor([1, 2, 3], shape: [1, 3]), "mixed/b.npy")
        let npy = errorText { _ = try InputData.load([path("mixed")], graph: g) }
        XCTAssertTrue(npy.contains("b.npy: the model has 2 inputs (x, ids) but this file feeds one"), npy)

        // Missing and unknown members.
        let other = graph(ValueInfo(name: "x", dtype: .float32, shape: [.fixed(1), .fixed(3)]),
                          ValueInfo(name: "mask", dtype: .bool, shape: nil))
        let unknown = errorText { _ = try InputData.load([stored], graph: other) }
        XCTAssertTrue(unknown.contains("member 'ids' is not an input of the model (its inputs: x, mask)"), unknown)
        let extra = graph(ValueInfo(name: "x", dtype: .float32, shape: [.fixed(1), .fixed(3)]),
                          ValueInfo(name: "ids", dtype: .int64, shape: nil), ValueInfo(name: "mask", dtype: .bool, shape: nil))
        let missing = errorText { _ = try InputData.load([stored], graph: extra) }
        XCTAssertTrue(missing.contains("no member for input 'mask' (members: x, ids)"), missing)
        // A member of the wrong shape names the archive and member.
        let shape = graph(ValueInfo(name: "x", dtype: .float32, shape: [.fixed(1), .fixed(3)]),
                          ValueInfo(name: "ids", dtype: .int64, shape: [.fixed(1), .fixed(5)]))
        let bad = errorText { _ = try InputData.load([stored], graph: shape) }
        XCTAssertTrue(bad.contains("stored.npz[ids]: shape [1, 4] does not fit input 'ids' [1, 5]"), bad)
    }

    func testSingleMemberNpzForASingleInputModel() throws {
        let npy = [UInt8](NPY.encode(Tensor([1, 2, 3, 4, 5, 6], shape: [2, 3])))
        try Data(makeZip([("arr_0.npy", npy)])).write(to: dir.appendingPathComponent("one.npz"))
        let set = try InputData.load([path("one.npz")], graph: graph(ValueInfo(name: "image", dtype: .float32, shape: [.fixed(3)])))
        XCTAssertEqual(set.samples.map { $0["image"]?.floats ?? [] }, [[1, 2, 3], [4, 5, 6]])
        XCTAssertEqual(set.sources, [path("one.npz") + "[0]", path("one.npz") + "[1]"])
    }

    func testBatchedNpzMembersMustAgree() throws {
        let x = [UInt8](NPY.encode(Tensor([1, 2, 3, 4], shape: [2, 2])))
        let y3 = [UInt8](NPY.encode(Tensor(ints: [1, 2, 3], shape: [3, 1])))
        let y2 = [UInt8](NPY.encode(Tensor(ints: [1, 2], shape: [2, 1])))
        let g = graph(ValueInfo(name: "x", dtype: .float32, shape: [.fixed(2)]), ValueInfo(name: "y", dtype: .int64, shape: [.fixed(1)]))
        try Data(makeZip([("x.npy", x), ("y.npy", y3)])).write(to: dir.appendingPathComponent("odd.npz"))
        let text = errorText { _ = try InputData.load([path("odd.npz")], graph: g) }
        XCTAssertTrue(text.contains("odd.npz: members hold different numbers of samples (x: 2, y: 3)"), text)
        try Data(makeZip([("y.npy", y2), ("x.npy", x)])).write(to: dir.appendingPathComponent("ok.npz"))
        let set = try InputData.load([path("ok.npz")], graph: g)
        XCTAssertEqual(set.samples.count, 2)
        XCTAssertEqual(set.samples[1]["x"], Tensor([3, 4], shape: [2]))
        XCTAssertEqual(set.samples[1]["y"], Tensor(ints: [2], shape: [1]))
    }

    // NAME=PATH.

    func testNamedFoldersPairByPosition() throws {
        let g = graph(ValueInfo(name: "image", dtype: .float32, shape: [.fixed(1), .fixed(2)]),
                      ValueInfo(name: "ids", dtype: .int64, shape: [.fixed(3)]))
        for i in 0..<3 {
            try save(Tensor([Float(i), Float(i)], shape: [1, 2]), "img/\(i).npy")
            try save(Tensor(ints: [Int64(i), 0, 0], shape: [3], dtype: .int32), "tok/t\(i).npy")
        }
        let set = try InputData.load(["ids=" + path("tok"), "image=" + path("img")], graph: g)
        XCTAssertEqual(set.samples.count, 3)
        for k in 0..<3 {
            XCTAssertEqual(set.samples[k]["image"]?.floats, [Float(k), Float(k)])
            XCTAssertEqual(set.samples[k]["ids"], Tensor(ints: [Int64(k), 0, 0], shape: [3]))
        }
        XCTAssertEqual(set.sources[1], "image: \(path("img"))/1.npy, ids: \(path("tok"))/t1.npy")
        XCTAssertEqual(set.description, "3 samples: image=3 .npy files in \(path("img"))/, ids=3 .npy files in \(path("tok"))/")

        // Counts that do not pair up.
        try save(Tensor(ints: [9, 0, 0], shape: [3]), "tok/t3.npy")
        let odd = errorText { _ = try InputData.load(["image=" + path("img"), "ids=" + path("tok")], graph: g) }
        XCTAssertTrue(odd.contains("input data do not pair up: image has 3, ids has 4 samples"), odd)
        // Missing, doubled and mixed specs.
        let missing = errorText { _ = try InputData.load(["image=" + path("img")], graph: g) }
        XCTAssertTrue(missing.contains("no data for input 'ids' (int64 [3]); give ids=PATH"), missing)
        let twice = errorText { _ = try InputData.load(["image=" + path("img"), "image=" + path("img")], graph: g) }
        XCTAssertTrue(twice.contains("input 'image' is given twice"), twice)
        let mixed = errorText { _ = try InputData.load(["image=" + path("img"), path("tok")], graph: g) }
        XCTAssertTrue(mixed.contains("mixing NAME=PATH and plain paths"), mixed)
        let unknown = errorText { _ = try InputData.load(["imgae=" + path("img")], graph: g) }
        XCTAssertTrue(unknown.contains("the model has no input 'imgae' (its inputs: image, ids)"), unknown)
    }

    func testOneSampleGoesWithEverySample() throws {
        // A recurrent model: frames vary, the initial state is given once.
        let g = graph(ValueInfo(name: "frames", dtype: .float32, shape: [.symbolic("n"), .fixed(2)]),
                      ValueInfo(name: "h", dtype: .float32, shape: [.fixed(1), .fixed(3)]),
                      ValueInfo(name: "c", dtype: .float32, shape: [.fixed(1), .fixed(3)]))
        for i in 0..<4 { try save(Tensor([Float(i), -Float(i)], shape: [1, 2]), "frames/\(i).npy") }
        try save(Tensor([1, 2, 3], shape: [1, 3]), "h.npy")
        try save(Tensor([4, 5, 6], shape: [1, 3]), "c0/c.npy")
        let set = try InputData.load(["frames=" + path("frames"), "h=" + path("h.npy"), "c=" + path("c0")], graph: g)
        XCTAssertEqual(set.samples.count, 4)
        for k in 0..<4 {
            XCTAssertEqual(set.samples[k]["frames"]?.floats, [Float(k), -Float(k)])
            XCTAssertEqual(set.samples[k]["h"]?.floats, [1, 2, 3])
            XCTAssertEqual(set.samples[k]["c"]?.floats, [4, 5, 6])
        }
        XCTAssertEqual(set.sources[2], "frames: \(path("frames"))/2.npy, h: \(path("h.npy")), c: \(path("c0"))/c.npy")
        XCTAssertTrue(set.description.hasPrefix("4 samples: frames=4 .npy files in"), set.description)
        XCTAssertTrue(set.description.contains("h=\(path("h.npy")) (with every sample)"), set.description)
        // Two inputs with several samples still have to agree.
        for i in 0..<3 { try save(Tensor([Float(i), 0, 0], shape: [1, 3]), "hs/\(i).npy") }
        let odd = errorText { _ = try InputData.load(["frames=" + path("frames"), "h=" + path("hs"), "c=" + path("c0")], graph: g) }
        XCTAssertTrue(odd.contains("input data do not pair up: frames has 4, h has 3, c has 1 samples"), odd)
        // Every input given once: one sample.
        let single = try InputData.load(["frames=" + path("frames/0.npy"), "h=" + path("h.npy"), "c=" + path("c0")], graph: g)
        XCTAssertEqual(single.samples.count, 1)
        XCTAssertEqual(single.description.hasPrefix("1 sample: "), true, single.description)
    }

    func testInputNamesWithEqualsSigns() throws {
        let g = graph(ValueInfo(name: "a=b", dtype: .float32, shape: [.fixed(1)]))
        try save(Tensor([4], shape: [1]), "v.npy")
        XCTAssertEqual(try InputData.load(["a=b=" + path("v.npy")], graph: g).samples[0]["a=b"], Tensor([4], shape: [1]))
    }

    // Bad paths and files.

    func testEmptyAndUselessFoldersAndBadFiles() throws {
        let g = graph(ValueInfo(name: "x", dtype: .float32, shape: [.fixed(2)]))
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("empty"), withIntermediateDirectories: true)
        XCTAssertEqual(errorText { _ = try InputData.load([path("empty")], graph: g) },
                       "\(path("empty"))/: the folder has no files (expected .npy, .npz, .png, .jpg or .txt input data)")
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("other"), withIntermediateDirectories: true)
        for n in ["a.txt", "b.gif", "c.csv", "d.json"] { try Data().write(to: dir.appendingPathComponent("other/\(n)")) }
        // .txt files in a folder are data only with --vocab.
        XCTAssertEqual(errorText { _ = try InputData.load([path("other")], graph: g) },
                       "\(path("other"))/: no .npy, .npz, .png, .jpg or .txt files in the folder (found 4 other files: a.txt, b.gif, c.csv, …)")
        XCTAssertEqual(errorText { _ = try InputData.load([path("nope.npy")], graph: g) }, "\(path("nope.npy")): no such file or folder")
        XCTAssertTrue(errorText { _ = try InputData.load([path("other/c.csv")], graph: g) }.contains("not a .npy, .npz, .png, .jpg or .txt file"))
        XCTAssertTrue(errorText { _ = try InputData.load([path("other/a.txt")], graph: g) }.contains("text input needs --vocab"))
        XCTAssertEqual(errorText { _ = try InputData.load([], graph: g) }, "no input data given")
        XCTAssertTrue(errorText { _ = try InputData.load(["x"], graph: Graph()) }.contains("no runtime inputs"))

        // Truncated and corrupt files name the file.
        try Data("garbage".utf8).write(to: dir.appendingPathComponent("bad.npy"))
        XCTAssertEqual(errorText { _ = try InputData.load([path("bad.npy")], graph: g) }, "\(path("bad.npy")): not a .npy file (bad magic)")
        let full = NPY.encode(Tensor([1, 2], shape: [2]))
        try full.prefix(full.count - 3).write(to: dir.appendingPathComponent("short.npy"))
        XCTAssertTrue(errorText { _ = try InputData.load([path("short.npy")], graph: g) }.hasPrefix("\(path("short.npy")): data has"))
        let stored = try Data(contentsOf: fixtures.appendingPathComponent("stored.npz"))
        try stored.prefix(300).write(to: dir.appendingPathComponent("cut.npz"))
        XCTAssertEqual(errorText { _ = try InputData.load([path("cut.npz")], graph: g) },
                       "\(path("cut.npz")): truncated or damaged ZIP archive (no end of central directory record)")
        var flipped = [UInt8](stored)
        flipped[150] ^= 0x40
        try Data(flipped).write(to: dir.appendingPathComponent("flip.npz"))
        let flip = errorText { _ = try InputData.load([path("flip.npz")], graph: g) }
        XCTAssertTrue(flip.hasPrefix("\(path("flip.npz")): member '"), flip)
        try Data(makeZip([])).write(to: dir.appendingPathComponent("none.npz"))
        XCTAssertEqual(errorText { _ = try InputData.load([path("none.npz")], graph: g) }, "\(path("none.npz")): the archive holds no arrays")
    }

    func testErrorsAreUserFacing() {
        let g = graph(ValueInfo(name: "x", dtype: .float32, shape: [.fixed(2)]))
        do { _ = try InputData.load([path("missing")], graph: g); XCTFail("no error") } catch {
            XCTAssertTrue(error is UserFacingError)
        }
    }

    /// numpy-written folders and archives, compressed and not, through the whole loader.
    func testNumpyGeneratedData() throws {
        try requirePython()
        try runPython("""
            import numpy as np, os
            rng = np.random.default_rng(11)
            os.makedirs("imgs")
            os.makedirs("pairs")
            for i in range(5):
                np.save("imgs/img%02d.npy" % i, rng.standard_normal((1, 3, 4, 4)).astype(np.float32))
            np.save("imgs/batch.npy", rng.standard_normal((3, 1, 3, 4, 4)))  # float64, batch of 3
            for i in range(4):
                f = np.savez_compressed if i % 2 else np.savez
                f("pairs/p%d.npz" % i, image=rng.standard_normal((1, 3, 4, 4)).astype(np.float32),
                  ids=rng.integers(0, 100, size=(1, 7)).astype(np.int64))
            np.savez_compressed("batched.npz", image=rng.standard_normal((6, 3, 4, 4)).astype(np.float32),
                                ids=rng.integers(0, 100, size=(6, 7)).astype(np.int32))
            """, in: dir)
        let single = graph(ValueInfo(name: "image", dtype: .float32, shape: [.fixed(1), .fixed(3), .fixed(4), .fixed(4)]))
        let set = try InputData.load([path("imgs")], graph: single)
        XCTAssertEqual(set.samples.count, 8)
        XCTAssertEqual(set.sources.prefix(3).map { URL(fileURLWithPath: $0).lastPathComponent }, ["batch.npy[0]", "batch.npy[1]", "batch.npy[2]"])
        XCTAssertEqual(set.description, "6 .npy files in \(path("imgs"))/ (8 samples)")
        XCTAssertTrue(set.samples.allSatisfy { $0["image"]?.shape == [1, 3, 4, 4] && $0["image"]?.dtype == .float32 })

        let double = graph(ValueInfo(name: "image", dtype: .float32, shape: [.symbolic("N"), .fixed(3), .fixed(4), .fixed(4)]),
                           ValueInfo(name: "ids", dtype: .int64, shape: [.fixed(1), .symbolic("seq")]))
        let pairs = try InputData.load([path("pairs")], graph: double)
        XCTAssertEqual(pairs.samples.count, 4)
        XCTAssertEqual(pairs.description, "4 .npz files in \(path("pairs"))/")
        let batched = try InputData.load([path("batched.npz")], graph: graph(
            ValueInfo(name: "image", dtype: .float32, shape: [.fixed(3), .fixed(4), .fixed(4)]),
            ValueInfo(name: "ids", dtype: .int64, shape: [.fixed(7)])))
        XCTAssertEqual(batched.samples.count, 6)
        XCTAssertEqual(batched.samples[5]["ids"]?.dtype, .int64)
    }

    // Hash.

    /// The documented byte layout, rebuilt by hand.
    func testHashSchemeIsAsDocumented() {
        let samples: [[String: Tensor]] = [["b": Tensor(ints: [1, -2], shape: [2], dtype: .int16), "a": Tensor([0.5], shape: [])]]
        var bytes = Array("shrinkwrap-inputs/1\n".utf8)
        func u64(_ v: Int) { withUnsafeBytes(of: UInt64(v).littleEndian) { bytes += $0 } }
        func str(_ s: String) { u64(s.utf8.count); bytes += Array(s.utf8) }
        u64(1); u64(2)
        str("a"); str("float32"); u64(0); u64(4); bytes += [0x00, 0x00, 0x00, 0x3F]
        str("b"); str("int16"); u64(1); u64(2); u64(4); bytes += [0x01, 0x00, 0xFE, 0xFF]
        XCTAssertEqual(InputData.sha256(of: samples), SHA256.hex(bytes))
        // Order of samples matters; content changes change the hash.
        let other = [["b": Tensor(ints: [1, -3], shape: [2], dtype: .int16), "a": Tensor([0.5], shape: [])]]
        XCTAssertNotEqual(InputData.sha256(of: samples), InputData.sha256(of: other))
        XCTAssertNotEqual(InputData.sha256(of: samples + other), InputData.sha256(of: other + samples))
    }

    // Random inputs.

    func testRandomInputsAreDeterministicAndWellShaped() throws {
        let g = graph(ValueInfo(name: "x", dtype: .float32, shape: [.symbolic("N"), .fixed(3), .fixed(64), .fixed(64)]),
                      ValueInfo(name: "ids", dtype: .int64, shape: [.fixed(1), .unknown]),
                      ValueInfo(name: "h", dtype: .float16, shape: [.fixed(5)]),
                      ValueInfo(name: "m", dtype: .bool, shape: [.fixed(8)]))
        let a = try InputData.random(count: 4, seed: 7, graph: g)
        let b = try InputData.random(count: 4, seed: 7, graph: g)
        let c = try InputData.random(count: 4, seed: 8, graph: g)
        XCTAssertEqual(a.samples, b.samples)
        XCTAssertEqual(a.sha256, b.sha256)
        XCTAssertNotEqual(a.sha256, c.sha256)
        XCTAssertTrue(a.random)
        XCTAssertEqual(a.sources, ["random #0", "random #1", "random #2", "random #3"])
        XCTAssertEqual(a.description, "4 random samples (seed 7)")
        XCTAssertEqual(a.samples[0]["x"]?.shape, [1, 3, 64, 64])
        XCTAssertEqual(a.samples[0]["ids"]?.shape, [1, 1])
        // The first samples of a longer set are the shorter set.
        XCTAssertEqual(try InputData.random(count: 2, seed: 7, graph: g).samples, Array(a.samples.prefix(2)))
        // Standard normal floats.
        let xs = a.samples.flatMap { $0["x"]?.floats ?? [] }.map(Double.init)
        let mean = xs.reduce(0, +) / Double(xs.count)
        let variance = xs.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(xs.count)
        XCTAssertEqual(mean, 0, accuracy: 0.02)
        XCTAssertEqual(variance, 1, accuracy: 0.02)
        XCTAssertEqual(Double(xs.filter { abs($0) < 1 }.count) / Double(xs.count), 0.6827, accuracy: 0.01)
        // float16 values are exact halves; integers in 0..<vocab.
        for s in a.samples {
            XCTAssertEqual(s["h"]?.floats?.map { Half.round($0) }, s["h"]?.floats)
            XCTAssertTrue(s["ids"]?.ints?.allSatisfy { (0..<2).contains($0) } ?? false)
        }
        let tokens = try InputData.random(count: 50, seed: 1, graph: graph(ValueInfo(name: "t", dtype: .int32, shape: [.fixed(100)])), vocab: 1000)
        let ints = tokens.samples.flatMap { $0["t"]?.ints ?? [] }
        XCTAssertTrue(ints.allSatisfy { (0..<1000).contains($0) })
        XCTAssertGreaterThan(Set(ints).count, 900)
    }

    /// Locks the generator: these bytes must be the same on every machine and in every release.
    func testRandomInputsGolden() throws {
        let g = graph(ValueInfo(name: "x", dtype: .float32, shape: [.fixed(2), .fixed(3)]),
                      ValueInfo(name: "ids", dtype: .int64, shape: [.fixed(4)]))
        let set = try InputData.random(count: 2, seed: 42, graph: g)
        // The same values come from a Python SplitMix64 + Box–Muller with libm's log/sin/cos, rounded to float32.
        XCTAssertEqual(set.samples[0]["x"], Tensor([0.41471976, 0.65268123, -0.89188623, 1.3268336, 1.729593, -1.8834168], shape: [2, 3]))
        XCTAssertEqual(set.samples[0]["ids"], Tensor(ints: [0, 1, 0, 1], shape: [4]))
        XCTAssertEqual(set.sha256, "bb4ba753256bc6cea903b1a06aab93f9bd27dd2f8db70b634b89bec51950bdfc")
    }

    func testDeterministicMathAgreesWithLibm() {
        var rng = TestRNG(state: 3)
        for _ in 0..<20000 {
            let v = Double(rng.next() >> 11) / 9_007_199_254_740_992
            let (s, c) = Normal.sinCos2Pi(v)
            XCTAssertEqual(s, sin(2 * .pi * v), accuracy: 1e-14)
            XCTAssertEqual(c, cos(2 * .pi * v), accuracy: 1e-14)
            let u = Double((rng.next() >> 11) + 1) / 9_007_199_254_740_992
            XCTAssertEqual(Normal.log(u), Foundation.log(u), accuracy: 1e-14 * max(1, abs(Foundation.log(u))))
        }
        XCTAssertEqual(Normal.log(1), 0)
        XCTAssertEqual(Normal.log(0x1p-53), -53 * Normal.ln2, accuracy: 1e-13)
    }

    func testRandomErrors() {
        let g = graph(ValueInfo(name: "x", dtype: .float32, shape: [.fixed(2)]))
        XCTAssertTrue(errorText { _ = try InputData.random(count: 0, seed: 0, graph: g) }.contains("at least 1"))
        XCTAssertTrue(errorText { _ = try InputData.random(count: 1, seed: 0, graph: g, vocab: 0) }.contains("vocabulary"))
        XCTAssertTrue(errorText { _ = try InputData.random(count: 1, seed: 0, graph: graph(ValueInfo(name: "r", dtype: .float32, shape: nil))) }
            .contains("input 'r' has unknown rank"))
        XCTAssertTrue(errorText { _ = try InputData.random(count: 1, seed: 0, graph: graph(ValueInfo(name: "big", dtype: .float32, shape: [.fixed(1 << 20), .fixed(1 << 20)]))) }
            .contains("too large"))
        XCTAssertTrue(errorText { _ = try InputData.random(count: 1 << 20, seed: 0, graph: graph(ValueInfo(name: "x", dtype: .float32, shape: [.fixed(1 << 12)]))) }
            .contains("too many"))
    }
}
