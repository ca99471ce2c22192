// Flatten / Reshape / Squeeze / Unsqueeze, Transpose, Concat, Split, Slice and Identity → NeuralNetwork layers (or blob aliases).
import CoreMLSchema
import ShrinkwrapIR

extension CoreMLLayerWriters {
    // MARK: shapes

    /// Flatten, Reshape, Squeeze, Unsqueeze: in rank-5 mode a no-op when the
    /// (C, H, W) blob is unchanged, else a classic flatten / reshape; with
    /// exact mapping a static reshape.
    static let reshape: Writer = { w, n in
        guard let x = n.input(0) else { throw LayerWriterError("no input") }
        let xs = try w.shape(x), ys = try w.shape(n.outputs[0])
        if w.rank5 {
            guard let bx = w.blobShape(xs), let by = w.blobShape(ys) else { throw CoreMLExporter.NeedsExactMapping.signal }
            if bx == by, !w.isGraphOutput(n.outputs[0]) { w.setAlias(n.outputs[0], to: try w.inputBlob(x)); return }
            var l = w.layer(n.name, inputs: [try w.inputBlob(x)], outputs: out(n))
            if by == [bx.reduce(1, *), 1, 1] {
                l.flatten.mode = .channelFirst
            } else {
                l.reshape.targetShape = by.map { Int64($0) }
                l.reshape.mode = .channelFirst
            }
            w.add(l)
            return
        }
        if xs == ys, !w.isGraphOutput(n.outputs[0]) { w.setAlias(n.outputs[0], to: try w.inputBlob(x)); return }
        try w.needND("reshapeStatic")
        var l = w.layer(n.name, inputs: [try w.inputBlob(x)], outputs: out(n))
        l.reshapeStatic.targetShape = (ys.isEmpty ? [1] : ys).map { Int64($0) }
        w.add(l)
    }

    static let flatten = reshape

    static let transpose: Writer = { w, n in
        guard let x = n.input(0) else { throw LayerWriterError("no input") }
        let r = try w.shape(x).count
        let perm = ints(n, "perm") ?? Array((0..<r).reversed())
        if perm == Array(0..<r), !w.isGraphOutput(n.outputs[0]) { w.setAlias(n.outputs[0], to: try w.inputBlob(x)); return }
        try w.needND("transpose")
        var l = w.layer(n.name, inputs: [try w.inputBlob(x)], outputs: out(n))
        l.transpose.axes = perm.map { UInt64($0) }
        w.add(l)
    }

    static let concat: Writer = { w, n in
        let ys = try w.shape(n.outputs[0])
        let axis = try normalize(int(n, "axis", 0), rank: ys.count)
        let ins = try n.inputs.filter { !$0.isEmpty }.map { try w.inputBlob($0) }
        var l = w.layer(n.name, inputs: ins, outputs: out(n))
        if w.rank5 ? axis == 1 : (ys.count >= 3 && axis == ys.count - 3) {
            l.concat = .init()
        } else {
            try w.needND("concatND")
            l.concatNd.axis = Int64(axis)
        }
        w.add(l)
    }

    static let split: Writer = { w, n in
        guard let x = n.input(0) else { throw LayerWriterError("no input") }
        let xs = try w.shape(x)
        let axis = try normalize(int(n, "axis", 0), rank: xs.count)
        let sizes = try n.outputs.map { try w.shape($0)[axis] }
        var l = w.layer(n.name, inputs: [try w.inputBlob(x)], outputs: n.outputs)
        if (w.rank5 ? axis == 1 : (xs.count >= 3 && axis == xs.count - 3)) && Set(sizes).count == 1 {
            l.split.nOutputs = UInt64(n.outputs.count)
        } else {
            try w.needND("splitND")
            l.splitNd.axis = Int64(axis)
            l.splitNd.numSplits = UInt64(n.outputs.count)
            l.splitNd.splitSizes = sizes.map { UInt64($0) }
        }
        w.add(l)
    }

    static let slice: Writer = { w, n in
        guard let x = n.input(0), let s = n.input(1), let e = n.input(2) else { throw LayerWriterError("no input") }
        let xs = try w.shape(x)
        let starts = try w.intValues(s), ends = try w.intValues(e)
        let axes = try n.input(3).map { try w.intValues($0) } ?? Array(0..<starts.count)
        let steps = try n.input(4).map { try w.intValues($0) } ?? Array(repeating: 1, count: starts.count)
        guard starts.count == ends.count, axes.count == starts.count, steps.count == starts.count else {
            throw LayerWriterError("starts, ends, axes and steps differ in length")
        }
        try w.needND("sliceStatic")
        let r = xs.count
        var begin = Array(repeating: Int64(0), count: r), end = xs.map { Int64($0) }
        var stride = Array(repeating: Int64(1), count: r)
        var beginMask = Array(repeating: true, count: r), endMask = Array(repeating: true, count: r)
        for i in 0..<starts.count {
            let a = try normalize(axes[i], rank: r)
            guard steps[i] > 0 else { throw LayerWriterError("negative slice steps") }
            let d = xs[a]
            func clampIndex(_ v: Int) -> Int { let v2 = v < 0 ? v + d : v; return min(max(v2, 0), d) }
            begin[a] = Int64(clampIndex(starts[i])); end[a] = Int64(clampIndex(ends[i])); stride[a] = Int64(steps[i])
            beginMask[a] = false; endMask[a] = false
        }
        var l = w.layer(n.name, inputs: [try w.inputBlob(x)], outputs: out(n))
        l.sliceStatic.beginIds = begin; l.sliceStatic.endIds = end; l.sliceStatic.strides = stride
        l.sliceStatic.beginMasks = beginMask; l.sliceStatic.endMasks = endMask
        w.add(l)
    }

    static let identity: Writer = { w, n in
        guard let x = n.input(0) else { throw LayerWriterError("no input") }
        if n.opType == "Cast" {
            let to = DType(onnxDataType: int(n, "to", 1))
            if to == .bool {
                // Non-zero → 1.0, zero → 0.0.
                try w.needND("notEqual")
                var l = w.layer(n.name, inputs: [try w.inputBlob(x)], outputs: out(n))
                l.notEqual.alpha = 0
                w.add(l)
                return
            }
            guard to?.isFloatingPoint == true || to == .int32 || to == .int64 else { throw LayerWriterError("cast to \(to.map { $0.rawValue } ?? "?")") }
        }
        if !w.isGraphOutput(n.outputs[0]) {
            w.setAlias(n.outputs[0], to: try w.inputBlob(x))
            return
        }
        var l = w.layer(n.name, inputs: [try w.inputBlob(x)], outputs: out(n))
        l.activation.linear.alpha = 1
        w.add(l)
    }
}
