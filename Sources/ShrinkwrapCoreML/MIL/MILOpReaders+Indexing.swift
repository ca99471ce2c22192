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
