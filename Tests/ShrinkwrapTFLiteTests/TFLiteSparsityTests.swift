import FlatBuffers
import Foundation
import ShrinkwrapIR
import ShrinkwrapRuntime
import ShrinkwrapTestSupport
@testable import ShrinkwrapTFLite
import XCTest

/// Sparse constants densified at import (DENSIFY folded away), hostile sparsity metadata, and
/// MediaPipe's CUSTOM Convolution2DTransposeBias with its raw custom_options.
final class TFLiteSparsityTests: XCTestCase {
    typealias T = TestTFLite.T
    typealias O = TestTFLite.O

    /// One dim_metadata entry: DENSE with `dense`, or SPARSE_CSR with segments and indices
    /// (vector types: 1 Int32Vector, 2 Uint16Vector, 3 Uint8Vector).
    struct Level {
        var format: Int8 = 0
        var dense: Int32 = 0
        var segments: [Int] = []
        var indices: [Int] = []
        var segmentType: UInt8 = 3
        var indexType: UInt8 = 3

        static func dense(_ n: Int32) -> Level { Level(dense: n) }
        static func csr(_ s: [Int], _ i: [Int], _ st: UInt8 = 3, _ it: UInt8 = 3) -> Level {
            Level(format: 1, segments: s, indices: i, segmentType: st, indexType: it)
        }
    }

    static func vector(_ b: FlatBufferBuilder, _ v: [Int], type: UInt8) -> FlatBufferOffset {
        let values: FlatBufferOffset
        switch type {
        case 1: values = b.createVector(v.map { Int32(truncatingIfNeeded: $0) })
        case 2: values = b.createVector(v.map { UInt16(truncatingIfNeeded: $0) })
        default: values = b.createVector(bytes: v.map { UInt8(truncatingIfNeeded: $0) }, alignment: 4)
        }
        return b.table { $0.add(0, values) }
    }

    static func sparsity(_ traversal: [Int32], _ blockMap: [Int32], _ levels: [Level]) -> (FlatBufferBuilder) -> FlatBufferOffset {
        { b in
            let dims = levels.map { l -> FlatBufferOffset in
                let s = l.format == 1 ? vector(b, l.segments, type: l.segmentType) : nil
                let i = l.format == 1 ? vector(b, l.indices, type: l.indexType) : nil
                return b.table { t in
                    t.add(0, l.format, default: 0); t.add(1, l.dense, default: 0)
                    if let s { t.addUnion(3, type: l.segmentType, value: s) }
                    if let i { t.addUnion(5, type: l.indexType, value: i) }
                }
            }
            let tv = b.createVector(traversal), bv = b.createVector(blockMap), dv = b.createVector(offsets: dims)
            return b.table { t in t.add(0, tv); t.add(1, bv); t.add(2, dv) }
        }
    }

    /// y = x + DENSIFY(w) for a sparse w of `shape`; with `float16`, DENSIFY then DEQUANTIZE as MediaPipe's models do.
    static func model(shape: [Int32], values: [UInt8], sparsity: @escaping (FlatBufferBuilder) -> FlatBufferOffset, float16: Bool = false) -> TestTFLite {
        var m = TestTFLite()
        m.tensors = [T(name: "x", shape: shape), T(name: "w", shape: shape, type: float16 ? 1 : 0, data: values, sparsity: sparsity),
                     T(name: "wd", shape: shape, type: float16 ? 1 : 0), T(name: "y", shape: shape)]
        m.ops = [O(code: 124, inputs: [1], outputs: [2]), O(code: 0, inputs: [0, 2], outputs: [3])]
        if float16 {
            m.tensors.append(T(name: "wf", shape: shape))
            m.ops = [m.ops[0], O(code: 6, inputs: [2], outputs: [4]), O(code: 0, inputs: [0, 4], outputs: [3])]
        }
        m.inputs = [0]
        m.outputs = [3]
        return m
    }

    func dense(_ m: TestTFLite, _ shape: [Int]) throws -> [Float] {
        let g = try TFLiteImporter.importModel(bytes: try m.bytes(), file: "m.tflite")
        XCTAssertFalse(g.nodes.contains { $0.opType == "DENSIFY" || $0.inputs.contains("w") }, "DENSIFY is folded into a constant")
        let n = shape.reduce(1, *)
        let out = try Interpreter(graph: g).run(["x": Tensor([Float](repeating: 0, count: n), shape: shape)])
        return try XCTUnwrap(out["y"]?.floats)
    }

    /// Rows 0..3 of a 4 × 4 matrix, CSR over columns: row 0 {2: 1}, row 1 {}, row 2 {0: 2, 3: 3}, row 3 {1: 4}.
    static let csr = sparsity([0, 1], [], [.dense(4), .csr([0, 1, 1, 3, 4], [2, 0, 3, 1])])
    static let csrDense: [Float] = [0, 0, 1, 0, 0, 0, 0, 0, 2, 0, 0, 3, 0, 4, 0, 0]

    func testCSRConstantIsDensified() throws {
        XCTAssertEqual(try dense(Self.model(shape: [4, 4], values: TestTFLite.floats([1, 2, 3, 4]), sparsity: Self.csr), [4, 4]), Self.csrDense)
    }

    func testBlockSparseColumnMajorAndFloat16() throws {
        // Columns in blocks of 2 (block_map [1]); int32 segments, uint16 indices.
        let blocks = Self.sparsity([0, 1, 2], [1], [.dense(4), .csr([0, 1, 1, 3, 4], [1, 0, 1, 0], 1, 2), .dense(2)])
        let m = Self.model(shape: [4, 4], values: TestTFLite.floats([1, 2, 3, 4, 5, 6, 7, 8]), sparsity: blocks)
        XCTAssertEqual(try dense(m, [4, 4]), [0, 0, 1, 2, 0, 0, 0, 0, 3, 4, 5, 6, 7, 8, 0, 0])
        // traversal_order [1, 0]: columns outside, rows inside; column 0 {1: 1}, column 1 {0: 2, 1: 3}, column 2 {}.
        let columns = Self.sparsity([1, 0], [], [.dense(3), .csr([0, 1, 3, 3], [1, 0, 1])])
        XCTAssertEqual(try dense(Self.model(shape: [2, 3], values: TestTFLite.floats([1, 2, 3]), sparsity: columns), [2, 3]), [0, 2, 0, 1, 3, 0])
        // float16 values (1, 2, −0.5, 4) behind DEQUANTIZE stay a float16 constant.
        let halves: [UInt16] = [0x3C00, 0x4000, 0xB800, 0x4400]
        let f16 = Self.model(shape: [4, 4], values: halves.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }, sparsity: Self.csr, float16: true)
        let g = try TFLiteImporter.importModel(bytes: try f16.bytes(), file: "m.tflite")
        guard case .float16? = g.constant(named: "wf")?.encoding else { return XCTFail("float16 weights are not kept float16") }
        XCTAssertEqual(try dense(f16, [4, 4]), [0, 0, 1, 0, 0, 0, 0, 0, 2, 0, 0, -0.5, 0, 4, 0, 0])
    }

    func testHostileSparsityMetadataGivesOneLineErrors() throws {
        let four = TestTFLite.floats([1, 2, 3, 4])
        let cases: [(String, TestTFLite)] = [
            ("dim_metadata[1]: array index 9 is outside the dimension's 4 entries",
             Self.model(shape: [4, 4], values: four, sparsity: Self.sparsity([0, 1], [], [.dense(4), .csr([0, 1, 1, 3, 4], [2, 0, 9, 1])]))),
            ("array_segments (4 entries) are not 5 non-decreasing offsets from 0 into the 4 array_indices",
             Self.model(shape: [4, 4], values: four, sparsity: Self.sparsity([0, 1], [], [.dense(4), .csr([0, 1, 3, 4], [2, 0, 3, 1])]))),
            ("array_segments (5 entries) are not 5 non-decreasing offsets",
             Self.model(shape: [4, 4], values: four, sparsity: Self.sparsity([0, 1], [], [.dense(4), .csr([0, 3, 1, 3, 4], [2, 0, 3, 1])]))),
            ("array_segments (5 entries) are not 5 non-decreasing offsets from 0 into the 4 array_indices",
             Self.model(shape: [4, 4], values: four, sparsity: Self.sparsity([0, 1], [], [.dense(4), .csr([0, 1, 1, 3, 200], [2, 0, 3, 1])]))),
            ("the metadata stores 4 values of 4 bytes, but the buffer holds 12 bytes",
             Self.model(shape: [4, 4], values: TestTFLite.floats([1, 2, 3]), sparsity: Self.csr)),
            ("traversal_order [0, 0] is not the 2 dimensions then the 0 block dimensions, each once",
             Self.model(shape: [4, 4], values: four, sparsity: Self.sparsity([0, 0], [], [.dense(4), .csr([0, 1, 1, 3, 4], [2, 0, 3, 1])]))),
            ("traversal_order has 2 entries and dim_metadata 1; rank 2 with 0 block dimensions needs 2",
             Self.model(shape: [4, 4], values: four, sparsity: Self.sparsity([0, 1], [], [.dense(4)]))),
            ("over the 1048576-byte limit for a sparse constant in this file",
             Self.model(shape: [1 << 20, 1 << 20], values: four, sparsity: Self.sparsity([0, 1], [], [.dense(1 << 20), .csr([0, 4], [0, 1, 2, 3])]))),
            ("unknown SparseIndexVector type 7",
             Self.model(shape: [4, 4], values: four, sparsity: Self.sparsity([0, 1], [], [.dense(4), .csr([0, 1, 1, 3, 4], [2, 0, 3, 1], 7)]))),
            ("block size 3 does not divide dimension 1 of [4, 4]",
             Self.model(shape: [4, 4], values: four, sparsity: Self.sparsity([0, 1, 2], [1], [.dense(4), .csr([0, 1, 1, 3, 4], [0, 0, 0, 0]), .dense(3)]))),
            ("block dimension 2 (dim_metadata[2]) is not DENSE with a positive dense_size",
             Self.model(shape: [4, 4], values: four, sparsity: Self.sparsity([0, 1, 2], [1], [.dense(4), .dense(2), .csr([0, 1], [0])]))),
            ("dim_metadata[0] is DENSE with dense_size 5, but the dimension it visits has 4",
             Self.model(shape: [4, 4], values: four, sparsity: Self.sparsity([0, 1], [], [.dense(5), .csr([0, 1, 1, 3, 4], [2, 0, 3, 1])]))),
            ("block_map [1, 1] does not name increasing dimensions below 2",
             Self.model(shape: [4, 4], values: four, sparsity: Self.sparsity([0, 1, 2, 3], [1, 1], [.dense(4), .dense(1), .dense(2), .dense(2)]))),
            ("format 5 is neither DENSE (0) nor SPARSE_CSR (1)",
             Self.model(shape: [4, 4], values: four, sparsity: Self.sparsity([0, 1], [], [.dense(4), Level(format: 5)]))),
            ("array_segments: malformed: missing on a SPARSE_CSR dimension",
             Self.model(shape: [4, 4], values: four, sparsity: Self.sparsity([0, 1], [], [.dense(4), .csr([], [], 0, 0)]))),
        ]
        for (want, m) in cases {
            let text = errorText { _ = try TFLiteImporter.importModel(bytes: try m.bytes(), file: "m.tflite") }
            XCTAssertTrue(text.hasPrefix("m.tflite: tensor[1] 'w'"), text)
            XCTAssertTrue(text.contains(want), "\(text) lacks: \(want)")
            XCTAssertFalse(text.contains("\n"), text)
        }
    }

    /// Truncations and random byte damage of a block-sparse model and of a Convolution2DTransposeBias model:
    /// errors naming the file, never a crash.
    func testDamagedSparseAndCustomFilesNeverCrash() throws {
        let blocks = Self.sparsity([0, 1, 2], [1], [.dense(4), .csr([0, 1, 1, 3, 4], [1, 0, 1, 0], 1, 2), .dense(2)])
        let sparse = try Self.model(shape: [4, 4], values: TestTFLite.floats([1, 2, 3, 4, 5, 6, 7, 8]), sparsity: blocks).bytes()
        let custom = try Self.transposeConvModel(options: Self.options(padding: 1, strideW: 2, strideH: 2), out: [1, 4, 6, 2],
                                                 weights: [Float](repeating: 1, count: 36), bias: [0, 0]).bytes()
        var rng = SplitMix(seed: 7)
        for bytes in [sparse, custom] {
            for n in 0..<bytes.count {
                let text = errorText { _ = try TFLiteImporter.importModel(bytes: Array(bytes[0..<n]), file: "t.tflite") }
                XCTAssertTrue(text.hasPrefix("t.tflite"), "cut at \(n): \(text)")
            }
            for _ in 0..<3000 {
                var d = bytes
                for _ in 0..<(1 + Int(rng.next() % 3)) { d[Int(rng.next() % UInt64(d.count))] = UInt8(truncatingIfNeeded: rng.next()) }
                let text = errorText { _ = try TFLiteImporter.importModel(bytes: d, file: "d.tflite") }
                XCTAssertTrue(text == "no error" || (text.hasPrefix("d.tflite") && !text.contains("\n")), text)
            }
        }
    }

    func testDensifyOfARunTimeValueIsRefused() throws {
        var m = TestTFLite()
        m.tensors = [T(name: "x", shape: [2]), T(name: "y", shape: [2])]
        m.ops = [O(code: 124, inputs: [0], outputs: [1])]
        m.inputs = [0]
        m.outputs = [1]
        XCTAssertEqual(errorText { _ = try TFLiteImporter.importModel(bytes: try m.bytes(), file: "m.tflite") },
                       "m.tflite: operators[0] DENSIFY → 'y': unsupported: DENSIFY of a value computed at run time (only sparse constants are densified)")
    }

    // MARK: - CUSTOM Convolution2DTransposeBias

    static func options(padding: Int32, strideW: Int32, strideH: Int32) -> [UInt8] { TestTFLite.ints([padding, strideW, strideH]) }

    /// x [1, 2, 3, 2] → Convolution2DTransposeBias (weights [2, 3, 3, 2] OHWI, bias [2]) → y.
    static func transposeConvModel(options: [UInt8]?, out: [Int32], weights: [Float], bias: [Float]) -> TestTFLite {
        var m = TestTFLite()
        m.tensors = [T(name: "x", shape: [1, 2, 3, 2]), T(name: "w", shape: [2, 3, 3, 2], data: TestTFLite.floats(weights)),
                     T(name: "b", shape: [2], data: TestTFLite.floats(bias)), T(name: "y", shape: out)]
        m.ops = [O(code: 32, custom: "Convolution2DTransposeBias", inputs: [0, 1, 2], outputs: [3], customOptions: options)]
        m.inputs = [0]
        m.outputs = [3]
        return m
    }

    /// MediaPipe's reference loop: every input pixel scatters weights × value into the output, offset by the top/left pad.
    static func reference(x: [Float], h: Int, w: Int, ci: Int, weights: [Float], bias: [Float], k: Int, stride: (Int, Int),
                          pad: (Int, Int), out: (Int, Int)) -> [Float] {
        let co = bias.count
        var y = [Float](repeating: 0, count: out.0 * out.1 * co)
        for p in 0..<(out.0 * out.1) { for o in 0..<co { y[p * co + o] = bias[o] } }
        for iy in 0..<h { for ix in 0..<w { for i in 0..<ci { for fy in 0..<k { for fx in 0..<k { for o in 0..<co {
            let oy = iy * stride.0 - pad.0 + fy, ox = ix * stride.1 - pad.1 + fx
            guard oy >= 0, oy < out.0, ox >= 0, ox < out.1 else { continue }
            y[(oy * out.1 + ox) * co + o] += x[(iy * w + ix) * ci + i] * weights[((o * k + fy) * k + fx) * ci + i]
        } } } } } }
        return y
    }

    func testConvolution2DTransposeBiasMatchesMediaPipesLoop() throws {
        let weights = (0..<36).map { Float(($0 * 7) % 11) - 5 }, bias: [Float] = [0.5, -2]
        let x = (0..<12).map { Float($0) / 4 - 1 }
        // SAME, strides 2 (h) × 1 (w): heights 2 → 2·1 + 3 − max(0, 3 − 1 − 1) = 4, pad 1 → 0 before;
        // widths 3 → 1·2 + 3 − max(0, 3 − 0 − 1) = 3, pad 2 → 1 before. VALID, strides 2 × 2: 5 × 7, no pad.
        let cases: [(padding: Int32, stride: (Int, Int), out: (Int, Int), pad: (Int, Int))] = [
            (1, (2, 1), (4, 3), (0, 1)), (2, (2, 2), (5, 7), (0, 0)),
        ]
        for c in cases {
            let m = Self.transposeConvModel(options: Self.options(padding: c.padding, strideW: Int32(c.stride.1), strideH: Int32(c.stride.0)),
                                            out: [1, Int32(c.out.0), Int32(c.out.1), 2], weights: weights, bias: bias)
            let g = try TFLiteImporter.importModel(bytes: try m.bytes(), file: "m.tflite")
            let y = try XCTUnwrap(try Interpreter(graph: g).run(["x": Tensor(x, shape: [1, 2, 3, 2])])["y"])
            XCTAssertEqual(y.shape, [1, c.out.0, c.out.1, 2], "padding \(c.padding)")
            let want = Self.reference(x: x, h: 2, w: 3, ci: 2, weights: weights, bias: bias, k: 3, stride: c.stride, pad: c.pad, out: c.out)
            let got = try XCTUnwrap(y.floats)
            XCTAssertEqual(got.count, want.count)
            for (a, b) in zip(got, want) { XCTAssertEqual(a, b, accuracy: 1e-5, "padding \(c.padding)") }
        }
    }

    func testHostileCustomOptionsGiveOneLineErrors() throws {
        let weights = [Float](repeating: 1, count: 36), bias: [Float] = [0, 0]
        let cases: [([UInt8]?, String)] = [
            ([1, 0, 0, 0, 2], "custom_options hold 5 bytes; Convolution2DTransposeBias needs 12 (padding, stride_width, stride_height as int32)"),
            (nil, "custom_options hold 0 bytes; Convolution2DTransposeBias needs 12"),
            (Self.options(padding: 0, strideW: 2, strideH: 2), "custom_options padding 0 is neither SAME (1) nor VALID (2)"),
            (Self.options(padding: 1, strideW: -2, strideH: 2), "strides 2×-2"),
        ]
        for (options, want) in cases {
            let m = Self.transposeConvModel(options: options, out: [1, 4, 6, 2], weights: weights, bias: bias)
            let text = errorText { _ = try TFLiteImporter.importModel(bytes: try m.bytes(), file: "m.tflite") }
            XCTAssertTrue(text.hasPrefix("m.tflite: operators[0] CUSTOM(Convolution2DTransposeBias) → 'y': malformed: "), text)
            XCTAssertTrue(text.contains(want), "\(text) lacks: \(want)")
            XCTAssertFalse(text.contains("\n"), text)
        }
    }
}
