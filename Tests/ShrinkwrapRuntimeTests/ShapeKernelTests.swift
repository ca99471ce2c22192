import XCTest
import ShrinkwrapIR
@testable import ShrinkwrapRuntime

/// Shape, layout and indexing kernels (Kernels/Shape.swift, Kernels/Indexing.swift).
/// Expected values are worked out by hand from the ONNX definitions; each
/// case says how.
final class ShapeKernelTests: XCTestCase {
    // MARK: helpers

    private func run(_ op: String, _ inputs: [Tensor?], _ attrs: [String: Attribute] = [:],
                     outputs: Int = 1, threads: Int = 1) throws -> [Tensor] {
        let node = Node(name: "n", opType: op, inputs: inputs.indices.map { inputs[$0] == nil ? "" : "i\($0)" },
                        outputs: (0..<outputs).map { "o\($0)" }, attributes: attrs)
        guard let k = KernelRegistry.kernels[op] else { throw KernelError.noKernel(op: op) }
        return try k(KernelContext(node: node, inputs: inputs, threads: threads))
    }

    private func run1(_ op: String, _ inputs: [Tensor?], _ attrs: [String: Attribute] = [:], threads: Int = 1) throws -> Tensor {
        let r = try run(op, inputs, attrs, threads: threads)
        guard let t = r.first else { throw KernelError.noKernel(op: op) }
        return t
    }

    private func f(_ v: [Float], _ s: [Int]) -> Tensor { Tensor(v, shape: s) }
    private func i64(_ v: [Int64], _ s: [Int]? = nil) -> Tensor { Tensor(ints: v, shape: s ?? [v.count]) }
    private func iota(_ s: [Int]) -> Tensor { Tensor((0..<s.reduce(1, *)).map(Float.init), shape: s) }

    private func assertThrows(_ op: String, _ inputs: [Tensor?], _ attrs: [String: Attribute] = [:],
                              file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try run(op, inputs, attrs), file: file, line: line) { e in
            XCTAssertTrue(e is KernelError, "\(e)", file: file, line: line)
        }
    }

    // MARK: reshaping

    func testFlatten() throws {
        let x = iota([2, 3, 4])
        XCTAssertEqual(try run1("Flatten", [x]).shape, [2, 12])                       // default axis 1
        XCTAssertEqual(try run1("Flatten", [x], ["axis": .int(0)]).shape, [1, 24])
        XCTAssertEqual(try run1("Flatten", [x], ["axis": .int(-1)]).shape, [6, 4])
        XCTAssertEqual(try run1("Flatten", [x], ["axis": .int(3)]).shape, [24, 1])
        XCTAssertEqual(try run1("Flatten", [x]).floats, x.floats)                     // no element moves
        assertThrows("Flatten", [x], ["axis": .int(4)])
        XCTAssertEqual(try run1("Flatten", [Tensor.zeros([0, 3])]).shape, [0, 3])
    }

    func testReshape() throws {
        let x = iota([2, 3, 4])
        XCTAssertEqual(try run1("Reshape", [x, i64([0, -1])]).shape, [2, 12])       // 0 copies dim 0, -1 = 24/2
        XCTAssertEqual(try run1("Reshape", [x, i64([-1, 4, 1])]).shape, [6, 4, 1])
        XCTAssertEqual(try run1("Reshape", [x, i64([4, 0, 2])]).shape, [4, 3, 2])   // 0 copies dim 1 = 3
        let e = Tensor.zeros([0, 3])
        XCTAssertEqual(try run1("Reshape", [e, i64([3, 0])], ["allowzero": .int(1)]).shape, [3, 0])
        assertThrows("Reshape", [x, i64([-1, -1])])
        assertThrows("Reshape", [x, i64([5, -1])])          // 24 not divisible by 5
        assertThrows("Reshape", [x, i64([2, 3, 5])])
        assertThrows("Reshape", [x, i64([2, -2, 12])])
        assertThrows("Reshape", [x, i64([0, 0, 0, 0])])     // 0 at position 3 has no input dim
        let b = Tensor(bools: [true, false, true, false], shape: [4])
        let rb = try run1("Reshape", [b, i64([2, 2])])
        XCTAssertEqual(rb.shape, [2, 2]); XCTAssertEqual(rb.dtype, .bool); XCTAssertEqual(rb.bools, b.bools)
    }

    func testSqueezeUnsqueeze() throws {
        let x = iota([1, 3, 1, 2])
        XCTAssertEqual(try run1("Squeeze", [x]).shape, [3, 2])                           // all size-1 axes
        XCTAssertEqual(try run1("Squeeze", [x, i64([-2])]).shape, [1, 3, 2])             // -2 → axis 2
        assertThrows("Squeeze", [x, i64([1])])                                           // size 3
        assertThrows("Squeeze", [x, i64([4])])
        let y = iota([3, 2])
        XCTAssertEqual(try run1("Unsqueeze", [y, i64([0, -1])]).shape, [1, 3, 2, 1])     // out rank 4: -1 → 3
        XCTAssertEqual(try run1("Unsqueeze", [y, i64([2, 0])]).shape, [1, 3, 1, 2])      // unsorted axes
        XCTAssertEqual(try run1("Unsqueeze", [Tensor.scalar(5), i64([0])]).shape, [1])
        assertThrows("Unsqueeze", [y, i64([1, 1])])
        assertThrows("Unsqueeze", [y, i64([3])])
    }

    // MARK: transpose

    /// Naive transpose for cross-checking the fast paths.
    private func naiveTranspose(_ x: Tensor, _ perm: [Int]) -> [Float] {
        let v = x.floats ?? []
        let outShape = perm.map { x.shape[$0] }
        let inS = stridesOf(x.shape), outS = stridesOf(outShape)
        var out = [Float](repeating: 0, count: v.count)
        for o in 0..<v.count {
            var rest = o, src = 0
            for j in 0..<outShape.count { let ix = rest / outS[j]; rest %= outS[j]; src += ix * inS[perm[j]] }
            out[o] = v[src]
        }
        return out
    }

    func testTranspose() throws {
        // [[0,1,2],[3,4,5]] transposed → [[0,3],[1,4],[2,5]]
        let t = try run1("Transpose", [iota([2, 3])])
        XCTAssertEqual(t.shape, [3, 2]); XCTAssertEqual(t.floats, [0, 3, 1, 4, 2, 5])
        for perm in [[0, 2, 3, 1], [0, 3, 1, 2], [1, 0, 2, 3], [3, 2, 1, 0], [2, 0, 3, 1], [0, 1, 2, 3]] {
            let x = iota([2, 3, 4, 5])
            let r = try run1("Transpose", [x], ["perm": .ints(perm)])
            XCTAssertEqual(r.shape, perm.map { x.shape[$0] })
            XCTAssertEqual(r.floats, naiveTranspose(x, perm), "perm \(perm)")
        }
        // Size-1 axes are dropped before choosing a path.
        let x1 = iota([1, 4, 1, 3])
        XCTAssertEqual(try run1("Transpose", [x1], ["perm": .ints([0, 3, 2, 1])]).floats, naiveTranspose(x1, [0, 3, 2, 1]))
        // Int and bool keep dtype.
        let xi = Tensor(ints: [1, 2, 3, 4, 5, 6], shape: [2, 3], dtype: .int32)
        let ti = try run1("Transpose", [xi])
        XCTAssertEqual(ti.ints, [1, 4, 2, 5, 3, 6]); XCTAssertEqual(ti.dtype, .int32)
        let tb = try run1("Transpose", [Tensor(bools: [true, false, false, true, true, false], shape: [3, 2])])
        XCTAssertEqual(tb.bools, [true, false, true, false, true, false])
        assertThrows("Transpose", [iota([2, 3])], ["perm": .ints([0, 0])])
        assertThrows("Transpose", [iota([2, 3])], ["perm": .ints([0, 1, 2])])
        XCTAssertEqual(try run1("Transpose", [Tensor.zeros([0, 3])]).shape, [3, 0])
    }

    func testTransposeDeterministicAcrossThreads() throws {
        let x = iota([2, 64, 33, 17])
        for perm in [[0, 2, 3, 1], [3, 1, 0, 2]] {
            let a = try run1("Transpose", [x], ["perm": .ints(perm)], threads: 1)
            let b = try run1("Transpose", [x], ["perm": .ints(perm)], threads: 4)
            XCTAssertEqual(a, b)
            XCTAssertEqual(a.floats, naiveTranspose(x, perm))
        }
    }

    // MARK: concat / split / slice

    func testConcat() throws {
        // [[1,2],[3,4]] ++ [[5],[6]] along axis -1 → [[1,2,5],[3,4,6]]
        let a = Tensor(ints: [1, 2, 3, 4], shape: [2, 2]), b = Tensor(ints: [5, 6], shape: [2, 1])
        let r = try run1("Concat", [a, b], ["axis": .int(-1)])
        XCTAssertEqual(r.shape, [2, 3]); XCTAssertEqual(r.ints, [1, 2, 5, 3, 4, 6])
        // Axis 0 with an empty part.
        let r0 = try run1("Concat", [f([1, 2], [1, 2]), Tensor.zeros([0, 2]), f([3, 4], [1, 2])], ["axis": .int(0)])
        XCTAssertEqual(r0.shape, [2, 2]); XCTAssertEqual(r0.floats, [1, 2, 3, 4])
        assertThrows("Concat", [f([1, 2], [1, 2]), f([1, 2, 3], [1, 3])], ["axis": .int(0)])
        assertThrows("Concat", [f([1, 2], [2]), i64([1, 2])], ["axis": .int(0)])
        assertThrows("Concat", [f([1, 2], [2])], ["axis": .int(1)])
        assertThrows("Concat", [Tensor.scalar(1)], ["axis": .int(0)])
    }

    func testSplit() throws {
        let x = iota([2, 5])
        // sizes [2,3] on axis 1: rows [0..4], [5..9] → [[0,1],[5,6]] and [[2,3,4],[7,8,9]]
        let r = try run("Split", [x, i64([2, 3])], ["axis": .int(1)], outputs: 2)
        XCTAssertEqual(r.map(\.shape), [[2, 2], [2, 3]])
        XCTAssertEqual(r[0].floats, [0, 1, 5, 6]); XCTAssertEqual(r[1].floats, [2, 3, 4, 7, 8, 9])
        // num_outputs 3 over 5 → ceil(5/3)=2: sizes 2, 2, 1
        let u = try run("Split", [x], ["axis": .int(-1), "num_outputs": .int(3)], outputs: 3)
        XCTAssertEqual(u.map(\.shape), [[2, 2], [2, 2], [2, 1]])
        XCTAssertEqual(u[2].floats, [4, 9])
        // zero-size part
        let z = try run("Split", [x, i64([0, 5])], ["axis": .int(1)], outputs: 2)
        XCTAssertEqual(z[0].shape, [2, 0])
        assertThrows("Split", [x, i64([2, 2])], ["axis": .int(1)])
        assertThrows("Split", [x, i64([6, -1])], ["axis": .int(1)])
        assertThrows("Split", [x], ["axis": .int(1), "num_outputs": .int(0)])
        assertThrows("Split", [x], ["axis": .int(1), "num_outputs": .int(Int.max)])
        assertThrows("Split", [x], ["axis": .int(1), "num_outputs": .int(4)])   // chunks of 2: 2+2+2 > 5
    }

    func testSlice() throws {
        let x = iota([3, 4])  // rows [0 1 2 3], [4 5 6 7], [8 9 10 11]
        // rows 1..<3, cols 0..<3 step 2 → [[4,6],[8,10]]
        let a = try run1("Slice", [x, i64([1, 0]), i64([3, 3]), i64([0, 1]), i64([1, 2])])
        XCTAssertEqual(a.shape, [2, 2]); XCTAssertEqual(a.floats, [4, 6, 8, 10])
        // Negative step: cols from -1 (3) down to (exclusive) 0 → 3,2,1
        let b = try run1("Slice", [x, i64([-1]), i64([0]), i64([1]), i64([-1])])
        XCTAssertEqual(b.shape, [3, 3]); XCTAssertEqual(b.floats, [3, 2, 1, 7, 6, 5, 11, 10, 9])
        // Full reverse with INT64_MIN end: clamped to -1 → all rows reversed
        let c = try run1("Slice", [x, i64([-1]), i64([Int64.min]), i64([0]), i64([-1])])
        XCTAssertEqual(c.floats, [8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3])
        // Out-of-bounds start/end clamp; negative axis.
        let d = try run1("Slice", [x, i64([2]), i64([1000]), i64([-1])])
        XCTAssertEqual(d.floats, [2, 3, 6, 7, 10, 11])
        let e = try run1("Slice", [x, i64([10]), i64([1000]), i64([1])])
        XCTAssertEqual(e.shape, [3, 0])
        // Step larger than the range: one element.
        XCTAssertEqual(try run1("Slice", [x, i64([0]), i64([4]), i64([1]), i64([Int64.max])]).floats, [0, 4, 8])
        assertThrows("Slice", [x, i64([0]), i64([1]), i64([0]), i64([0])])
        assertThrows("Slice", [x, i64([0, 0]), i64([1, 1]), i64([0, 0])])
        assertThrows("Slice", [x, i64([0]), i64([1]), i64([2])])
        assertThrows("Slice", [x, i64([0]), i64([1, 2])])
    }

    // MARK: broadcasting copies

    func testExpandAndTile() throws {
        // [3,1] → [2,3,4]: each row value repeated 4 times, whole block twice
        let x = f([1, 2, 3], [3, 1])
        let e = try run1("Expand", [x, i64([2, 1, 4])])
        XCTAssertEqual(e.shape, [2, 3, 4])
        XCTAssertEqual(e.floats?.prefix(12).map { $0 }, [1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3])
        XCTAssertEqual(try run1("Expand", [x, i64([1, 1])]).shape, [3, 1])    // shape smaller than input: bidirectional
        assertThrows("Expand", [x, i64([2, 2])])
        assertThrows("Expand", [x, i64([-1, 1])])
        // Tile [[1,2],[3,4]] by [1,2] → [[1,2,1,2],[3,4,3,4]]
        let t = try run1("Tile", [Tensor(ints: [1, 2, 3, 4], shape: [2, 2]), i64([1, 2])])
        XCTAssertEqual(t.shape, [2, 4]); XCTAssertEqual(t.ints, [1, 2, 1, 2, 3, 4, 3, 4])
        XCTAssertEqual(try run1("Tile", [iota([2, 2]), i64([0, 3])]).shape, [0, 6])
        assertThrows("Tile", [iota([2, 2]), i64([1])])
        assertThrows("Tile", [iota([2, 2]), i64([1, -1])])
        XCTAssertThrowsError(try run("Tile", [iota([2, 2]), i64([1 << 40, 1 << 20])]))   // too large
    }

    func testPadModes() throws {
        let x = f([1, 2, 3], [3])
        // pads [2, 1]: constant 9 → [9,9,1,2,3,9]
        XCTAssertEqual(try run1("Pad", [x, i64([2, 1]), Tensor.scalar(9)]).floats, [9, 9, 1, 2, 3, 9])
        // reflect (no edge repeat): positions -2,-1 → 3,2 ; 3 → 2  → [3,2,1,2,3,2]
        XCTAssertEqual(try run1("Pad", [x, i64([2, 1])], ["mode": .string("reflect")]).floats, [3, 2, 1, 2, 3, 2])
        // edge → [1,1,1,2,3,3]
        XCTAssertEqual(try run1("Pad", [x, i64([2, 1])], ["mode": .string("edge")]).floats, [1, 1, 1, 2, 3, 3])
        // wrap → -2 → 2, -1 → 3, 3 → 1 → [2,3,1,2,3,1]
        XCTAssertEqual(try run1("Pad", [x, i64([2, 1])], ["mode": .string("wrap")]).floats, [2, 3, 1, 2, 3, 1])
        // Negative pads crop: [-1, 0] → [2,3]
        XCTAssertEqual(try run1("Pad", [x, i64([-1, 0])]).floats, [2, 3])
        // 2-D with axes input [-1]: pad only the last axis by (1, 0) with default 0 → [[0,0,1],[0,2,3]]
        let y = try run1("Pad", [iota([2, 2]), i64([1, 0]), nil, i64([-1])])
        XCTAssertEqual(y.shape, [2, 3]); XCTAssertEqual(y.floats, [0, 0, 1, 0, 2, 3])
        // Int data with an int constant.
        let zi = try run1("Pad", [Tensor(ints: [5], shape: [1], dtype: .int32), i64([1, 1]), Tensor(ints: [7], shape: [], dtype: .int32)])
        XCTAssertEqual(zi.ints, [7, 5, 7]); XCTAssertEqual(zi.dtype, .int32)
        assertThrows("Pad", [x, i64([1])])
        assertThrows("Pad", [x, i64([-2, -2])])
        assertThrows("Pad", [x, i64([1, 1])], ["mode": .string("mirror")])
        assertThrows("Pad", [Tensor.zeros([0]), i64([1, 1])], ["mode": .string("edge")])
        assertThrows("Pad", [x, i64([1, 1]), i64([1])])       // constant type differs
    }

    // MARK: small factories

    func testShapeSizeDropout() throws {
        let x = iota([2, 3, 4])
        XCTAssertEqual(try run1("Shape", [x]).ints, [2, 3, 4])
        XCTAssertEqual(try run1("Shape", [x], ["start": .int(-2)]).ints, [3, 4])
        XCTAssertEqual(try run1("Shape", [x], ["start": .int(1), "end": .int(-1)]).ints, [3])
        XCTAssertEqual(try run1("Shape", [x], ["start": .int(-10), "end": .int(10)]).ints, [2, 3, 4])   // clamped
        XCTAssertEqual(try run1("Shape", [x], ["start": .int(2), "end": .int(1)]).shape, [0])
        let s = try run1("Size", [x])
        XCTAssertEqual(s.shape, []); XCTAssertEqual(s.ints, [24]); XCTAssertEqual(s.dtype, .int64)
        let d = try run("Dropout", [x, Tensor.scalar(0.5)], outputs: 2)
        XCTAssertEqual(d[0], x); XCTAssertEqual(d[1].dtype, .bool); XCTAssertEqual(d[1].bools, [Bool](repeating: true, count: 24))
        // training_mode false, or true with ratio 0, is the identity; true with a ratio is refused.
        XCTAssertEqual(try run1("Dropout", [x, Tensor.scalar(0.5), Tensor(bools: [false], shape: [])]), x)
        XCTAssertEqual(try run1("Dropout", [x, Tensor.scalar(0), Tensor(bools: [true], shape: [])]), x)
        assertThrows("Dropout", [x, Tensor.scalar(0.5), Tensor(bools: [true], shape: [])])
        assertThrows("Dropout", [x, nil, Tensor(bools: [true], shape: [])])
    }

    /// Results whose size comes from values in the file, between the interpreter's limit (2^31
    /// elements) and what checkedElementCount alone allows (2^34): each is a "too large" error.
    /// Before the limit these allocated 16–64 GiB and the process died (a 133-byte ONNX file did it).
    func testValueSizedResultsBeyondTheLimitAreErrors() throws {
        XCTAssertEqual(KernelContext.elementLimit, 1 << 31)
        let one = f([1], [1])
        let column = Tensor([Float](repeating: 0, count: 1 << 16), shape: [1 << 16, 1])
        let row = Tensor([Float](repeating: 0, count: 1 << 16), shape: [1, 1 << 16])
        let cases: [(String, [Tensor?])] = [
            ("ConstantOfShape", [i64([1 << 17, 1 << 16])]),   // 2^33 elements
            ("Expand", [one, i64([1 << 17, 1 << 17])]),        // 2^34
            ("Tile", [one, i64([1 << 34])]),                   // 2^34
            ("Pad", [one, i64([1 << 33, 0])]),                 // 2^33 + 1
            ("Add", [column, row]),                            // a broadcast to 2^32
        ]
        for (op, inputs) in cases {
            XCTAssertThrowsError(try run(op, inputs), op) { e in
                guard case KernelError.tooLarge(_, _, _, let limit) = e else { return XCTFail("\(op): \(e)") }
                XCTAssertEqual(limit, 1 << 31)
            }
        }
        XCTAssertEqual(try run1("Add", [f([0, 0], [2, 1]), row]).shape, [2, 1 << 16])
    }

    func testConstantOfShapeRangeEyeLike() throws {
        let z = try run1("ConstantOfShape", [i64([2, 3])])
        XCTAssertEqual(z.dtype, .float32); XCTAssertEqual(z.floats, [Float](repeating: 0, count: 6))
        let v = try run1("ConstantOfShape", [i64([2])], ["value": .tensor(Tensor(ints: [7], shape: [1], dtype: .int32))])
        XCTAssertEqual(v.dtype, .int32); XCTAssertEqual(v.ints, [7, 7])
        XCTAssertEqual(try run1("ConstantOfShape", [i64([], [0])]).shape, [])   // empty shape → scalar
        assertThrows("ConstantOfShape", [i64([-1])])
        XCTAssertThrowsError(try run("ConstantOfShape", [i64([1 << 30, 1 << 30])])) { e in
            guard case KernelError.tooLarge = e else { return XCTFail("\(e)") }
        }
        // Range(1, 2, 0.25): ceil(1/0.25) = 4 values 1, 1.25, 1.5, 1.75
        XCTAssertEqual(try run1("Range", [Tensor.scalar(1), Tensor.scalar(2), Tensor.scalar(0.25)]).floats, [1, 1.25, 1.5, 1.75])
        // Range(10, 4, -3) int32: ceil(-6/-3) = 2 values 10, 7
        let ri = try run1("Range", [Tensor.scalar(int: 10, dtype: .int32), Tensor.scalar(int: 4, dtype: .int32),
                                    Tensor.scalar(int: -3, dtype: .int32)])
        XCTAssertEqual(ri.ints, [10, 7]); XCTAssertEqual(ri.dtype, .int32)
        XCTAssertEqual(try run1("Range", [Tensor.scalar(int: 5), Tensor.scalar(int: 1), Tensor.scalar(int: 1)]).shape, [0])
        assertThrows("Range", [Tensor.scalar(1), Tensor.scalar(2), Tensor.scalar(0)])
        XCTAssertEqual(try run1("Range", [Tensor.scalar(0), Tensor.scalar(-1e30), Tensor.scalar(1)]).shape, [0])
        XCTAssertThrowsError(try run("Range", [Tensor.scalar(0), Tensor.scalar(1e30), Tensor.scalar(1)]))
        assertThrows("Range", [Tensor.scalar(1), Tensor.scalar(int: 2), Tensor.scalar(1)])
        // EyeLike 2×3, k=1 → ones at (0,1), (1,2); dtype 7 = int64
        let e = try run1("EyeLike", [Tensor.zeros([2, 3])], ["k": .int(1), "dtype": .int(7)])
        XCTAssertEqual(e.dtype, .int64); XCTAssertEqual(e.ints, [0, 1, 0, 0, 0, 1])
        XCTAssertEqual(try run1("EyeLike", [Tensor.zeros([3, 2])], ["k": .int(-1)]).floats, [0, 0, 1, 0, 0, 1])
        XCTAssertEqual(try run1("EyeLike", [Tensor.zeros([2, 2])], ["k": .int(5)]).floats, [0, 0, 0, 0])
        assertThrows("EyeLike", [Tensor.zeros([2])])
        assertThrows("EyeLike", [Tensor.zeros([2, 2])], ["dtype": .int(999)])
    }

    // MARK: gathers

    func testGather() throws {
        let x = iota([3, 3])  // [[0,1,2],[3,4,5],[6,7,8]]
        // axis 0, indices [[0,1],[1,2]] → shape [2,2,3]
        let a = try run1("Gather", [x, i64([0, 1, 1, 2], [2, 2])])
        XCTAssertEqual(a.shape, [2, 2, 3]); XCTAssertEqual(a.floats, [0, 1, 2, 3, 4, 5, 3, 4, 5, 6, 7, 8])
        // axis 1, indices [-1, 0] → columns 2, 0
        let b = try run1("Gather", [x, i64([-1, 0])], ["axis": .int(1)])
        XCTAssertEqual(b.shape, [3, 2]); XCTAssertEqual(b.floats, [2, 0, 5, 3, 8, 6])
        // scalar index removes the axis
        XCTAssertEqual(try run1("Gather", [x, i64([1], [])]).shape, [3])
        assertThrows("Gather", [x, i64([3])])
        assertThrows("Gather", [x, i64([-4])])
        assertThrows("Gather", [x, f([0], [1])])
        assertThrows("Gather", [x, i64([0])], ["axis": .int(2)])
    }

    func testGatherElementsAndND() throws {
        // GatherElements axis 1: data [[1,2],[3,4]], indices [[0,0],[1,0]] → [[1,1],[4,3]]
        let d = f([1, 2, 3, 4], [2, 2])
        XCTAssertEqual(try run1("GatherElements", [d, i64([0, 0, 1, 0], [2, 2])], ["axis": .int(1)]).floats, [1, 1, 4, 3])
        // axis 0 with negative index -1 → row 1; indices [[-1, 0]] → [[3, 2]]
        XCTAssertEqual(try run1("GatherElements", [d, i64([-1, 0], [1, 2])]).floats, [3, 2])
        assertThrows("GatherElements", [d, i64([2, 0], [1, 2])])
        assertThrows("GatherElements", [d, i64([0, 0, 0], [1, 3])])     // exceeds data on axis 1
        // GatherND: data [[0,1],[2,3]], indices [[0,0],[1,1]] → [0,3]; [[1],[0]] → rows
        let g = Tensor(ints: [0, 1, 2, 3], shape: [2, 2], dtype: .int32)
        XCTAssertEqual(try run1("GatherND", [g, i64([0, 0, 1, 1], [2, 2])]).ints, [0, 3])
        let rows = try run1("GatherND", [g, i64([1, 0], [2, 1])])
        XCTAssertEqual(rows.shape, [2, 2]); XCTAssertEqual(rows.ints, [2, 3, 0, 1])
        // batch_dims 1: data [[[0,1],[2,3]],[[4,5],[6,7]]], indices [[1],[0]] → [[2,3],[4,5]]
        let g3 = iota([2, 2, 2])
        XCTAssertEqual(try run1("GatherND", [g3, i64([1, 0], [2, 1])], ["batch_dims": .int(1)]).floats, [2, 3, 4, 5])
        assertThrows("GatherND", [g, i64([2, 0], [1, 2])])
        assertThrows("GatherND", [g, i64([0, 0, 0], [1, 3])])
    }

    // MARK: scatters

    func testScatterElements() throws {
        let data = f([0, 0, 0, 0, 0, 0], [2, 3])
        // axis 1, indices [[1,0],[2,-1]], updates [[10,20],[30,40]] → [[20,10,0],[0,0,40]] (−1 → 2, written after 30)
        let r = try run1("ScatterElements", [data, i64([1, 0, 2, -1], [2, 2]), f([10, 20, 30, 40], [2, 2])], ["axis": .int(1)])
        XCTAssertEqual(r.floats, [20, 10, 0, 0, 0, 40])
        // reduction add with duplicates: [1,2,3,4,5] += 1.1 at 1 and 2.1 at 1 → index 1 = 2 + 3.2
        let a = try run1("ScatterElements", [f([1, 2, 3, 4, 5], [1, 5]), i64([1, 1], [1, 2]), f([1.1, 2.1], [1, 2])],
                         ["axis": .int(1), "reduction": .string("add")])
        XCTAssertEqual(a.floats?[1] ?? 0, 5.2, accuracy: 1e-6)
        let mx = try run1("ScatterElements", [Tensor(ints: [5, 5], shape: [2]), i64([0, 1]), Tensor(ints: [3, 9], shape: [2])],
                          ["reduction": .string("max")])
        XCTAssertEqual(mx.ints, [5, 9])
        let mn = try run1("ScatterElements", [Tensor(ints: [5, 5], shape: [2]), i64([0, 1]), Tensor(ints: [3, 9], shape: [2])],
                          ["reduction": .string("min")])
        XCTAssertEqual(mn.ints, [3, 5])
        // int8 mul wraps: 100 * 3 = 300 → 44
        let w = try run1("ScatterElements", [Tensor(ints: [100], shape: [1], dtype: .int8), i64([0]),
                                             Tensor(ints: [3], shape: [1], dtype: .int8)], ["reduction": .string("mul")])
        XCTAssertEqual(w.ints, [44])
        assertThrows("ScatterElements", [data, i64([3, 0], [1, 2]), f([1, 2], [1, 2])], ["axis": .int(1)])
        assertThrows("ScatterElements", [data, i64([0, 0], [1, 2]), f([1], [1, 1])], ["axis": .int(1)])
        assertThrows("ScatterElements", [data, i64([0, 0], [1, 2]), f([1, 2], [1, 2])], ["reduction": .string("avg")])
    }

    func testScatterND() throws {
        // data [1..8], indices [[4],[3],[1],[7]], updates [9,10,11,12] → [1,11,3,10,9,6,7,12]
        let r = try run1("ScatterND", [f([1, 2, 3, 4, 5, 6, 7, 8], [8]), i64([4, 3, 1, 7], [4, 1]), f([9, 10, 11, 12], [4])])
        XCTAssertEqual(r.floats, [1, 11, 3, 10, 9, 6, 7, 12])
        // slice updates: data 2×2 zeros, indices [[1]], updates [[5,6]] multiply → zeros stay 0; add → row 1 = 5,6
        let add = try run1("ScatterND", [Tensor.zeros([2, 2]), i64([1], [1, 1]), f([5, 6], [1, 2])], ["reduction": .string("add")])
        XCTAssertEqual(add.floats, [0, 0, 5, 6])
        let mul = try run1("ScatterND", [f([1, 2, 3, 4], [2, 2]), i64([-1, 0], [1, 2]), f([10], [1])], ["reduction": .string("mul")])
        XCTAssertEqual(mul.floats, [1, 2, 30, 4])   // index (-1,0) → (1,0): 3 × 10
        assertThrows("ScatterND", [Tensor.zeros([2, 2]), i64([2], [1, 1]), f([5, 6], [1, 2])])
        assertThrows("ScatterND", [Tensor.zeros([2, 2]), i64([1], [1, 1]), f([5, 6, 7], [1, 3])])
    }

    // MARK: selections

    func testOneHot() throws {
        // indices [0, 2, -1, 5] depth 3 values [0, 1] axis -1:
        // 0 → [1,0,0]; 2 → [0,0,1]; -1 → 2 → [0,0,1]; 5 out of range → all off
        let r = try run1("OneHot", [i64([0, 2, -1, 5]), Tensor.scalar(3), f([0, 1], [2])])
        XCTAssertEqual(r.shape, [4, 3])
        XCTAssertEqual(r.floats, [1, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0])
        // axis 0 → shape [3, 2]; indices [1, 0], values int [-1, 7]: column j has 7 at row idx[j]
        let a = try run1("OneHot", [i64([1, 0]), Tensor.scalar(int: 3), Tensor(ints: [-1, 7], shape: [2], dtype: .int32)],
                         ["axis": .int(0)])
        XCTAssertEqual(a.shape, [3, 2]); XCTAssertEqual(a.dtype, .int32); XCTAssertEqual(a.ints, [-1, 7, 7, -1, -1, -1])
        assertThrows("OneHot", [i64([0]), Tensor.scalar(0), f([0, 1], [2])])
        assertThrows("OneHot", [i64([0]), Tensor.scalar(2), f([0, 1, 2], [3])])
        assertThrows("OneHot", [i64([0]), Tensor.scalar(2), f([0, 1], [2])], ["axis": .int(3)])
    }

    func testTrilu() throws {
        let x = iota([3, 3])  // [[0,1,2],[3,4,5],[6,7,8]]
        XCTAssertEqual(try run1("Trilu", [x]).floats, [0, 1, 2, 0, 4, 5, 0, 0, 8])                    // upper, k=0
        XCTAssertEqual(try run1("Trilu", [x, i64([1], [])]).floats, [0, 1, 2, 0, 0, 5, 0, 0, 0])      // upper, k=1
        XCTAssertEqual(try run1("Trilu", [x], ["upper": .int(0)]).floats, [0, 0, 0, 3, 4, 0, 6, 7, 8])
        XCTAssertEqual(try run1("Trilu", [x, i64([-1], [])], ["upper": .int(0)]).floats, [0, 0, 0, 3, 0, 0, 6, 7, 0])
        XCTAssertEqual(try run1("Trilu", [x, i64([Int64.max], [])]).floats, [Float](repeating: 0, count: 9))
        XCTAssertEqual(try run1("Trilu", [x, i64([Int64.min], [])]).floats, x.floats)
        let b = try run1("Trilu", [Tensor(bools: [true, true, true, true], shape: [1, 2, 2])], ["upper": .int(0)])
        XCTAssertEqual(b.bools, [true, false, true, true])
        assertThrows("Trilu", [f([1, 2], [2])])
    }

    func testTopK() throws {
        // Row [3, 1, 3, 2]: largest 2 → values [3,3], indices [0,2] (tie: smaller index first)
        let x = f([3, 1, 3, 2, 0, 5, 4, 5], [2, 4])
        let r = try run("TopK", [x, i64([2])], outputs: 2)
        XCTAssertEqual(r[0].floats, [3, 3, 5, 5]); XCTAssertEqual(r[1].ints, [0, 2, 1, 3])
        // smallest along axis 0: columns (3,0),(1,5),(3,4),(2,5) → k=1 → [0,1,3,2], indices [1,0,0,0]
        let s = try run("TopK", [x, i64([1])], ["axis": .int(0), "largest": .int(0)], outputs: 2)
        XCTAssertEqual(s[0].shape, [1, 4]); XCTAssertEqual(s[0].floats, [0, 1, 3, 2]); XCTAssertEqual(s[1].ints, [1, 0, 0, 0])
        let i = try run("TopK", [Tensor(ints: [4, 9, 1], shape: [3], dtype: .uint64), i64([3])], outputs: 2)
        XCTAssertEqual(i[0].ints, [9, 4, 1]); XCTAssertEqual(i[0].dtype, .uint64); XCTAssertEqual(i[1].ints, [1, 0, 2])
        XCTAssertEqual(try run("TopK", [x, i64([0])], outputs: 2)[0].shape, [2, 0])
        // NaN sorts above every number.
        let n = try run("TopK", [f([1, .nan, 2], [3]), i64([2])], outputs: 2)
        XCTAssertEqual(n[1].ints, [1, 2])
        assertThrows("TopK", [x, i64([5])])
        assertThrows("TopK", [x, i64([-1])])
        assertThrows("TopK", [Tensor(bools: [true], shape: [1]), i64([1])])
    }

    func testNonZeroCumSumCompress() throws {
        // [[1,0],[0,3]] → coordinates (0,0), (1,1) → [[0,1],[0,1]]
        let nz = try run1("NonZero", [f([1, 0, 0, 3], [2, 2])])
        XCTAssertEqual(nz.shape, [2, 2]); XCTAssertEqual(nz.ints, [0, 1, 0, 1])
        XCTAssertEqual(try run1("NonZero", [Tensor(bools: [false, false], shape: [2])]).shape, [1, 0])
        // CumSum [1,2,3,4]: inclusive [1,3,6,10]; exclusive [0,1,3,6]; reverse [10,9,7,4]; both [9,7,4,0]
        let v = f([1, 2, 3, 4], [4])
        let axis0 = i64([0], [])
        XCTAssertEqual(try run1("CumSum", [v, axis0]).floats, [1, 3, 6, 10])
        XCTAssertEqual(try run1("CumSum", [v, axis0], ["exclusive": .int(1)]).floats, [0, 1, 3, 6])
        XCTAssertEqual(try run1("CumSum", [v, axis0], ["reverse": .int(1)]).floats, [10, 9, 7, 4])
        XCTAssertEqual(try run1("CumSum", [v, axis0], ["reverse": .int(1), "exclusive": .int(1)]).floats, [9, 7, 4, 0])
        // 2-D int, axis -1 (int32 axis tensor): [[1,2],[3,4]] → [[1,3],[3,7]]
        let ci = try run1("CumSum", [Tensor(ints: [1, 2, 3, 4], shape: [2, 2], dtype: .int32), Tensor.scalar(int: -1, dtype: .int32)])
        XCTAssertEqual(ci.ints, [1, 3, 3, 7])
        assertThrows("CumSum", [v, i64([1], [])])
        // Compress [[1,2],[3,4],[5,6]] with [false, true, true] on axis 0 → [[3,4],[5,6]]
        let x = iota([3, 2])
        let c0 = try run1("Compress", [x, Tensor(bools: [false, true, true], shape: [3])], ["axis": .int(0)])
        XCTAssertEqual(c0.shape, [2, 2]); XCTAssertEqual(c0.floats, [2, 3, 4, 5])
        // no axis: flattened, condition shorter than the input → [1, 2] (elements 1, 2 of 0..5)
        let c1 = try run1("Compress", [x, Tensor(bools: [false, true, true], shape: [3])])
        XCTAssertEqual(c1.shape, [2]); XCTAssertEqual(c1.floats, [1, 2])
        // negative axis on the columns
        XCTAssertEqual(try run1("Compress", [x, Tensor(bools: [true, false], shape: [2])], ["axis": .int(-1)]).floats, [0, 2, 4])
        assertThrows("Compress", [x, Tensor(bools: [false, false, false, true], shape: [4])], ["axis": .int(0)])
    }

    func testGatherDeterministicAcrossThreads() throws {
        let x = iota([64, 50, 20])
        let idx = i64((0..<40).map { Int64(($0 * 7) % 50) - 25 })
        let a = try run1("Gather", [x, idx], ["axis": .int(1)], threads: 1)
        let b = try run1("Gather", [x, idx], ["axis": .int(1)], threads: 3)
        XCTAssertEqual(a, b)
        XCTAssertEqual(a.shape, [64, 40, 20])
        // spot check: out[5, 3, 7] = x[5, idx[3], 7] with idx[3] = 21 - 25 = -4 → 46
        XCTAssertEqual(a.floats?[(5 * 40 + 3) * 20 + 7], Float((5 * 50 + 46) * 20 + 7))
    }
}
