// scatterAlongAxis, oneHot, rangeStatic / rangeDynamic, getShape, sliceDynamic,
// broadcastToDynamic and copy layers (specification 4–5) → IR nodes. Core ML blobs are
// float: indices, shapes and bounds are cast to int64 where the IR op wants integers.
import CoreMLSchema
import ShrinkwrapIR

extension CoreMLLayerReaders {
    // MARK: dynamic layers

    static func asInt64(_ b: inout GraphBuilderState, _ v: String, _ name: String) -> String {
        b.node("Cast", "\(name)_int", [v], [b.temp("\(v)_int")], ["to": .int(7)], rank: b.ranks[v])
    }

    static let scatterAlongAxis: Reader = { b, l, p in
        guard l.input.count == 3, l.output.count == 1 else { throw ImportError.malformed(b.loc(p), reason: "needs 3 inputs and 1 output") }
        let ins = try l.input.map { try b.value($0, place: p) }
        let y = try b.define(l.output[0], place: p)
        let reductions: [CoreML_Specification_ScatterMode: String] = [.scatterUpdate: "none", .scatterAdd: "add", .scatterMul: "mul",
                                                                      .scatterMax: "max", .scatterMin: "min"]
        guard let reduction = reductions[l.scatterAlongAxis.mode] else { throw LayerReaderError("scatter mode \(l.scatterAlongAxis.mode)") }
        let idx = asInt64(&b, ins[1], l.name)
        b.node("ScatterElements", l.name, [ins[0], idx, ins[2]], [y],
               ["axis": .int(Int(max(min(l.scatterAlongAxis.axis, 64), -64))), "reduction": .string(reduction)], rank: b.ranks[ins[0]])
    }

    /// oneHot: an index outside [0, size) gives all offValue; ONNX's OneHot counts negative
    /// indices from the end, so those are moved out of range first.
    static let oneHot: Reader = { b, l, p in
        guard l.input.count == 1 else { throw LayerReaderError("a runtime one-hot size (second input)") }
        let (x, y) = try one(&b, l, p)
        let q = l.oneHot
        guard q.oneHotVectorSize >= 1, q.oneHotVectorSize <= 1 << 31 else {
            throw ImportError.malformed(b.loc(p), reason: "oneHotVectorSize \(q.oneHotVectorSize)")
        }
        let size = Float(q.oneHotVectorSize)
        let r = b.ranks[x]
        let negative = b.node("Less", "\(l.name)_negative", [x, b.floats("\(l.name)_zero", [0], shape: [])], [b.temp("\(l.name)_negative")], rank: r)
        let index = b.node("Where", "\(l.name)_index", [negative, b.floats("\(l.name)_outside", [size], shape: []), x],
                           [b.temp("\(l.name)_index")], rank: r)
        b.node("OneHot", l.name, [index, b.ints("\(l.name)_depth", [Int(q.oneHotVectorSize)]), b.floats("\(l.name)_values", [q.offValue, q.onValue])],
               [y], ["axis": .int(Int(max(min(q.axis, 64), -64)))], rank: r.map { $0 + 1 })
    }

    static let rangeStatic: Reader = { b, l, p in
        guard l.input.isEmpty, l.output.count == 1 else { throw ImportError.malformed(b.loc(p), reason: "needs no input and 1 output") }
        let y = try b.define(l.output[0], place: p)
        let q = l.rangeStatic
        b.node("Range", l.name, [b.floats("\(l.name)_start", [q.startValue], shape: []), b.floats("\(l.name)_end", [q.endValue], shape: []),
                                 b.floats("\(l.name)_step", [q.stepSizeValue], shape: [])], [y], rank: 1)
    }

    /// rangeDynamic: inputs end, then optionally start and step (the parameters stand in for absent ones).
    static let rangeDynamic: Reader = { b, l, p in
        guard (1...3).contains(l.input.count), l.output.count == 1 else {
            throw ImportError.malformed(b.loc(p), reason: "needs 1 to 3 inputs and 1 output")
        }
        let ins = try l.input.map { try b.value($0, place: p) }
        let y = try b.define(l.output[0], place: p)
        func scalar(_ k: Int, _ what: String, _ fallback: Float) -> String {
            guard k < ins.count else { return b.floats("\(l.name)_\(what)", [fallback], shape: []) }
            return b.node("Reshape", "\(l.name)_\(what)", [ins[k], b.ints("\(l.name)_scalar", [])], [b.temp("\(l.name)_\(what)")], rank: 0)
        }
        let end = scalar(0, "end", 0), start = scalar(1, "start", l.rangeDynamic.startValue)
        let step = scalar(2, "step", l.rangeDynamic.stepSizeValue)
        b.node("Range", l.name, [start, end, step], [y], rank: 1)
    }

    static let getShape: Reader = { b, l, p in
        let (x, y) = try one(&b, l, p)
        let s = b.node("Shape", "\(l.name)_shape", [x], [b.temp("\(l.name)_shape")], rank: 1)
        asFloat(&b, s, to: y, l.name)
    }

    static let broadcastToDynamic: Reader = { b, l, p in
        guard l.input.count == 2, l.output.count == 1 else { throw ImportError.malformed(b.loc(p), reason: "needs 2 inputs and 1 output") }
        let x = try b.value(l.input[0], place: p), s = try b.value(l.input[1], place: p)
        let y = try b.define(l.output[0], place: p)
        b.node("Expand", l.name, [x, asInt64(&b, s, l.name)], [y], rank: nil)
    }

    /// copy: an Identity (a copy to an existing blob re-binds the name; loops read that as a carried value).
    static let copy: Reader = { b, l, p in
        let (x, y) = try one(&b, l, p)
        b.node("Identity", l.name, [x], [y], rank: b.ranks[x])
    }

    /// sliceDynamic(data, begin[, end[, strides]]): masks from the parameters (mask inputs are not read).
    static let sliceDynamic: Reader = { b, l, p in
        guard (2...4).contains(l.input.count) else { throw LayerReaderError("\(l.input.count) inputs (mask inputs are not read)") }
        guard l.output.count == 1 else { throw ImportError.malformed(b.loc(p), reason: "needs 1 output") }
        let ins = try l.input.map { try b.value($0, place: p) }
        let y = try b.define(l.output[0], place: p)
        let q = l.sliceDynamic
        let r = try rank(b, ins[0])
        func list<T>(_ v: [T], _ what: String, _ fallback: T) throws -> [T] {
            if v.isEmpty { return Array(repeating: fallback, count: r) }
            guard v.count == r else { throw ImportError.malformed(b.loc(p), reason: "\(what) has \(v.count) entries for rank \(r)") }
            return v
        }
        let beginMasks = try list(q.beginMasks, "beginMasks", false), endMasks = try list(q.endMasks, "endMasks", false)
        let squeeze = try list(q.squeezeMasks, "squeezeMasks", false)
        let strides = try list(q.strides, "strides", 1).map { Int(max(min($0, 1 << 31), -(1 << 31))) }
        guard strides.allSatisfy({ $0 != 0 }) else { throw ImportError.malformed(b.loc(p), reason: "a zero stride") }
        let big = 1 << 62
        func bounds(_ v: String, masks: [Bool], fill: (Int) -> Int, _ what: String) -> String {
            let i = asInt64(&b, v, "\(l.name)_\(what)")
            guard masks.contains(true) else { return i }
            let keep = b.ints("\(l.name)_\(what)_keep", masks.map { $0 ? 0 : 1 })
            let f = b.ints("\(l.name)_\(what)_fill", masks.indices.map { masks[$0] ? fill(strides[$0]) : 0 })
            let m = b.node("Mul", "\(l.name)_\(what)_kept", [i, keep], [b.temp("\(l.name)_\(what)_kept")], rank: 1)
            return b.node("Add", "\(l.name)_\(what)_masked", [m, f], [b.temp("\(l.name)_\(what)_masked")], rank: 1)
        }
        let begin = bounds(ins[1], masks: beginMasks, fill: { $0 > 0 ? 0 : big }, "begin")
        let end: String
        if ins.count >= 3 {
            end = bounds(ins[2], masks: endMasks, fill: { $0 > 0 ? big : -big }, "end")
        } else {
            let ends = try list(q.endIds, "endIds", 0)
            guard !q.endIds.isEmpty || endMasks.allSatisfy({ $0 }) else { throw ImportError.malformed(b.loc(p), reason: "no endIds") }
            end = b.ints("\(l.name)_end", ends.indices.map { endMasks[$0] ? (strides[$0] > 0 ? big : -big) : Int(max(min(ends[$0], 1 << 62), -(1 << 62))) })
        }
        let step = ins.count == 4 ? asInt64(&b, ins[3], "\(l.name)_strides") : b.ints("\(l.name)_strides", strides)
        let sliced = squeeze.contains(true) ? b.temp("\(l.name)_sliced") : y
        b.node("Slice", l.name, [ins[0], begin, end, b.ints("\(l.name)_axes", Array(0..<r)), step], [sliced], rank: r)
        if sliced != y {
            let axes = squeeze.indices.filter { squeeze[$0] }
            b.node("Squeeze", "\(l.name)_squeeze", [sliced, b.ints("\(l.name)_squeeze_axes", axes)], [y], rank: max(r - axes.count, 1))
        }
    }
}
