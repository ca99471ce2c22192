import ShrinkwrapIR

/// Slicing, gathering, cumulative sums, top-k and band_part.
extension MILOpReaders {
    static let slicing: [String: MILOpReader] = [
        "slice_by_index": { r in try r.sliceByIndex() },
        "slice_by_size": { r in try r.sliceBySize() },
    ]

    static let indexing: [String: MILOpReader] = [
        "gather": { r in
            let x = try r.x(), indices = try r.x("indices")
            guard try r.int("batch_dims", 0) == 0 else { throw r.refuse("gather with batch_dims ≠ 0") }
            r.node("Gather", [x, indices], [r.out()], ["axis": .int(try r.axis(try r.int("axis", 0), rank: try r.needRank(x)))])
        },
        "gather_along_axis": { r in
            let x = try r.x(), indices = try r.x("indices")
            r.node("GatherElements", [x, indices], [r.out()], ["axis": .int(try r.axis(try r.int("axis", 0), rank: try r.needRank(x)))])
        },
        "scatter": { r in try r.scatter(along: true, ir: "ScatterElements", elementwise: false) },
        "scatter_along_axis": { r in try r.scatter(along: true, ir: "ScatterElements", elementwise: true) },
        "scatter_nd": { r in try r.scatter(along: false, ir: "ScatterND", elementwise: false) },
        "gather_nd": { r in
            r.node("GatherND", [try r.x(), try r.x("indices")], [r.out()], ["batch_dims": .int(try r.int("batch_dims", 0))])
        },
        "cumsum": { r in
            let x = try r.x()
            let a = try r.axis(try r.int("axis", 0), rank: try r.needRank(x))
            r.node("CumSum", [x, r.ints([a], "\(r.out())_axis")], [r.out()],
                   ["exclusive": .int(try r.bool("exclusive", false) ? 1 : 0), "reverse": .int(try r.bool("reverse", false) ? 1 : 0)])
        },
        "topk": { r in try r.topk() },
        "band_part": { r in try r.bandPart() },
    ]
}

extension MILReader {
    /// slice_by_index with constant begin / end / stride and TF-style masks.
    mutating func sliceByIndex() throws {
        let x = try self.x()
        let r = try needRank(x)
        guard let begin = try intList("begin"), let end = try intList("end"), begin.count == r, end.count == r else {
            throw refuse("slice_by_index needs constant begin and end of the input's rank \(r)")
        }
        let strides = try intList("stride") ?? Array(repeating: 1, count: r)
        let beginMask = try boolList("begin_mask") ?? Array(repeating: false, count: r)
        let endMask = try boolList("end_mask") ?? Array(repeating: false, count: r)
        let squeezeMask = try boolList("squeeze_mask") ?? Array(repeating: false, count: r)
        guard strides.count == r, beginMask.count == r, endMask.count == r, squeezeMask.count == r, !strides.contains(0) else {
            throw bad("stride / masks do not match rank \(r), or a stride is 0")
        }
        var starts: [Int64] = [], ends: [Int64] = [], steps: [Int64] = []
        for k in 0..<r {
            if squeezeMask[k] {
                starts.append(Int64(begin[k])); ends.append(begin[k] == -1 ? Int64.max : Int64(begin[k] + 1)); steps.append(1)
                continue
            }
            let forward = strides[k] > 0
            starts.append(beginMask[k] ? (forward ? 0 : Int64.max) : Int64(begin[k]))
            ends.append(endMask[k] ? (forward ? Int64.max : Int64.min) : Int64(end[k]))
            steps.append(Int64(strides[k]))
        }
        var inputs = [x]
        for (v, hint) in [(starts, "starts"), (ends, "ends"), ((0..<r).map(Int64.init), "axes"), (steps, "steps")] {
            inputs.append(constant(.dense(Tensor(ints: v, shape: [r])), "\(out())_\(hint)"))
        }
        let squeezed = (0..<r).filter { squeezeMask[$0] }
        if squeezed.isEmpty {
            node("Slice", inputs, [out()])
        } else {
            let s = temp("sliced")
            node("Slice", inputs, [s])
            node("Squeeze", [s, ints(squeezed, "\(out())_squeeze_axes")], [out()])
        }
    }

    /// slice_by_size: size −1 runs to the end.
    mutating func sliceBySize() throws {
        let x = try self.x()
        let r = try needRank(x)
        if isComputed("begin") { return try sliceBySizeFromRunTimeBegin(x, rank: r) }
        guard let begin = try intList("begin"), let size = try intList("size"), begin.count == r, size.count == r else {
            throw refuse("slice_by_size needs constant begin and size of the input's rank \(r)")
        }
        let dims = shape(x)
        var starts: [Int64] = [], ends: [Int64] = []
        for k in 0..<r {
            var b = begin[k]
            if b < 0 {
                guard let d = dims?[k] else { throw refuse("a negative begin on an axis of unknown size") }
                b += d
            }
            starts.append(Int64(b))
            ends.append(size[k] == -1 ? Int64.max : Int64(b + size[k]))
        }
        node("Slice", [x, constant(.dense(Tensor(ints: starts, shape: [r])), "\(out())_starts"),
                       constant(.dense(Tensor(ints: ends, shape: [r])), "\(out())_ends")], [out()])
    }

    /// slice_by_size whose begin is computed: Slice from begin (negative ones
    /// counted from the end) to begin + size (size −1: to the end).
    mutating func sliceBySizeFromRunTimeBegin(_ x: String, rank r: Int) throws {
        guard let size = try intList("size"), size.count == r else { throw refuse("slice_by_size needs a constant size of the input's rank \(r)") }
        guard let dims = shape(x) else { throw refuse("slice_by_size from a computed begin into an input of unknown shape") }
        let begin = try self.x("begin")
        guard shape(begin) == [r] else { throw bad("begin must hold \(r) integers") }
        let wide = temp("begin_int64"), negative = temp("begin_negative"), shifted = temp("begin_shifted"), starts = temp("starts"), ends = temp("ends")
        node("Cast", [begin], [wide], ["to": .int(DType.int64.onnxDataType)])
        node("Less", [wide, ints(Array(repeating: 0, count: r), "\(out())_zero")], [negative])
        node("Add", [wide, ints(dims, "\(out())_dims")], [shifted])
        node("Where", [negative, shifted, wide], [starts])
        // Size −1 reaches past any end (Slice clamps).
        node("Add", [starts, ints(zip(size, dims).map { $0 == -1 ? $1 : $0 }, "\(out())_size")], [ends])
        node("Slice", [x, starts, ends], [out()])
    }

    /// scatter (rows along an axis), scatter_along_axis (elements along an
    /// axis) and scatter_nd → ScatterElements / ScatterND; the modes are
    /// ONNX's reductions (MIL's default mode is add).
    mutating func scatter(along: Bool, ir: String, elementwise: Bool) throws {
        let data = try x("data"), indices = try x("indices"), updates = try x("updates")
        let reductions = ["update": "none", "add": "add", "mul": "mul", "max": "max", "min": "min"]
        let mode = try string("mode", "add")
        guard let reduction = reductions[mode] else { throw refuse("\(op.type) mode '\(mode)'") }
        var attributes: [String: Attribute] = ["reduction": .string(reduction)]
        if along {
            let rank = try needRank(data)
            let a = try axis(try int("axis", 0), rank: rank)
            attributes["axis"] = .int(a)
            if !elementwise {
                // scatter: indices pick whole slices along the axis, as ONNX's ScatterND does along axis 0.
                guard a == 0, shape(indices)?.count == 1 else { throw refuse("scatter along axis \(a) or with indices of rank ≠ 1") }
                let column = temp("indices_column")
                node("Unsqueeze", [indices, ints([1], "\(out())_column_axis")], [column])
                node("ScatterND", [data, column, updates], [out()], ["reduction": .string(reduction)])
                return
            }
        }
        node(ir, [data, indices, updates], [out()], attributes)
    }

    /// topk: values and int32 indices along axis; ascending picks the smallest.
    mutating func topk() throws {
        let x = try self.x()
        let a = try axis(try int("axis", -1), rank: try needRank(x))
        let k = try int("k", 1)
        guard k >= 1 else { throw bad("k = \(k)") }
        let indices = op.outputs.count > 1 ? temp("indices") : temp("unused_indices")
        node("TopK", [x, ints([k], "\(out())_k")], [out(), indices],
             ["axis": .int(a), "largest": .int(try bool("ascending", false) ? 0 : 1), "sorted": .int(1)])
        if op.outputs.count > 1 { node("Cast", [indices], [out(1)], ["to": .int(DType.int32.onnxDataType)]) }
    }

    /// band_part: keeps `lower` sub-diagonals and `upper` super-diagonals of the last two axes (negative: all).
    mutating func bandPart() throws {
        var y = try self.x()
        let lower = try int("lower", -1), upper = try int("upper", -1)
        if lower >= 0 {
            let t = upper >= 0 ? temp("lower_band") : out()
            node("Trilu", [y, constant(.dense(.scalar(int: Int64(-lower))), "\(out())_lower")], [t], ["upper": .int(1)])
            y = t
        }
        if upper >= 0 {
            node("Trilu", [y, constant(.dense(.scalar(int: Int64(upper))), "\(out())_upper")], [out()], ["upper": .int(0)])
        } else if lower < 0 {
            node("Identity", [y], [out()])
        }
    }
}
