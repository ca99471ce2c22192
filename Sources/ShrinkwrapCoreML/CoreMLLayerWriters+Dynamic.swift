// ScatterElements, OneHot, Range, Tile, Shape and Slice with runtime bounds → the NeuralNetwork
// layers of specification 4 (scatterAlongAxis, rangeStatic / rangeDynamic, tile, getShape,
// sliceDynamic) and 5 (oneHot). Values computed at run time (a loop's step counter) travel as
// float blobs, exact for integers below 2²⁴.
import CoreMLSchema
import ShrinkwrapIR

extension CoreMLLayerWriters {
    // MARK: indexing

    /// ScatterElements(data, indices, updates): scatterAlongAxis, whose indices and updates
    /// must have the data's shape except along the axis.
    static let scatterElements: Writer = { w, n in
        guard let d = n.input(0), let i = n.input(1), let u = n.input(2) else { throw LayerWriterError("needs three inputs") }
        let ds = try w.shape(d), ins = try w.shape(i), us = try w.shape(u)
        let axis = try normalize(int(n, "axis", 0), rank: ds.count)
        guard ins == us, ins.count == ds.count, ins.indices.allSatisfy({ $0 == axis || ins[$0] == ds[$0] }) else {
            throw LayerWriterError("indices \(ins) and updates \(us) must match data \(ds) except along axis \(axis)")
        }
        let modes: [String: CoreML_Specification_ScatterMode] = ["none": .scatterUpdate, "add": .scatterAdd, "mul": .scatterMul,
                                                                 "max": .scatterMax, "min": .scatterMin]
        guard let mode = modes[string(n, "reduction", "none")] else { throw LayerWriterError("reduction '\(string(n, "reduction", "none"))'") }
        try w.needND("scatterAlongAxis")
        var l = w.layer(n.name, inputs: try [d, i, u].map { try w.inputBlob($0) }, outputs: out(n))
        l.scatterAlongAxis.axis = Int64(axis)
        l.scatterAlongAxis.mode = mode
        w.add(l)
    }

    /// OneHot(indices, depth, [off, on]): the oneHot layer (specification 5). ONNX counts a
    /// negative index from the end, Core ML gives it all-off: runtime indices get depth added
    /// where negative first.
    static let oneHot: Writer = { w, n in
        guard let i = n.input(0), let d = n.input(1), let v = n.input(2) else { throw LayerWriterError("needs three inputs") }
        guard w.graph.isConstant(d), w.graph.isConstant(v) else { throw LayerWriterError("depth and values must be constants") }
        let depth = try w.intValues(d), values = try w.values(v)
        guard depth.count == 1, depth[0] >= 1, depth[0] <= 1 << 24, values.count == 2 else {
            throw LayerWriterError("depth \(depth) or values \(values.count) elements")
        }
        let ys = try w.shape(n.outputs[0])
        let axis = try normalize(int(n, "axis", -1), rank: ys.count)
        try w.needND("oneHot")
        w.require(5, "oneHot")
        var index = try w.inputBlob(i)
        if !w.graph.isConstant(i) {
            let negative = w.freshBlob("\(n.outputs[0])_negative"), shift = w.freshBlob("\(n.outputs[0])_shift")
            let wrapped = w.freshBlob("\(n.outputs[0])_index")
            var lt = w.layer("\(n.name)_negative", inputs: [index], outputs: [negative])
            lt.lessThan.alpha = 0
            w.add(lt)
            var scale = w.layer("\(n.name)_shift", inputs: [negative], outputs: [shift])
            scale.activation.linear.alpha = Float(depth[0])
            w.add(scale)
            var add = w.layer("\(n.name)_wrap", inputs: [index, shift], outputs: [wrapped])
            add.addBroadcastable = .init()
            w.add(add)
            index = wrapped
        }
        var l = w.layer(n.name, inputs: [index], outputs: out(n))
        l.oneHot.oneHotVectorSize = UInt64(depth[0])
        l.oneHot.axis = Int64(axis)
        l.oneHot.offValue = values[0]
        l.oneHot.onValue = values[1]
        w.add(l)
    }

    // MARK: shapes at run time

    /// Range(start, limit, delta): rangeStatic when all three are constants, else rangeDynamic
    /// (inputs end, start, step).
    static let range: Writer = { w, n in
        guard let s = n.input(0), let e = n.input(1), let d = n.input(2) else { throw LayerWriterError("needs three inputs") }
        try w.needND("range layers")
        if [s, e, d].allSatisfy(w.graph.isConstant) {
            let v = try [s, e, d].map { try w.values($0) }
            guard v.allSatisfy({ $0.count == 1 }) else { throw LayerWriterError("start, limit and delta must be scalars") }
            var l = w.layer(n.name, inputs: [], outputs: out(n))
            l.rangeStatic.startValue = v[0][0]; l.rangeStatic.endValue = v[1][0]; l.rangeStatic.stepSizeValue = v[2][0]
            w.add(l)
            return
        }
        var l = w.layer(n.name, inputs: try [e, s, d].map { try w.inputBlob($0) }, outputs: out(n))
        l.rangeDynamic = .init()
        w.add(l)
    }

    /// Tile: the repeats are the output's static shape over the input's (the repeats input may be computed).
    static let tile: Writer = { w, n in
        guard let x = n.input(0) else { throw LayerWriterError("no input") }
        let xs = try w.shape(x), ys = try w.shape(n.outputs[0])
        guard xs.count == ys.count, zip(xs, ys).allSatisfy({ $0.0 > 0 && $0.1 % $0.0 == 0 }) else {
            throw LayerWriterError("output \(ys) is not a tiling of \(xs)")
        }
        if xs == ys, !w.isGraphOutput(n.outputs[0]) { w.setAlias(n.outputs[0], to: try w.inputBlob(x)); return }
        try w.needND("tile")
        var l = w.layer(n.name, inputs: [try w.inputBlob(x)], outputs: out(n))
        l.tile.reps = zip(xs, ys).map { UInt64($0.1 / $0.0) }
        w.add(l)
    }

    /// Shape: getShape, then a static slice for the start / end attributes.
    static let shapeOf: Writer = { w, n in
        guard let x = n.input(0) else { throw LayerWriterError("no input") }
        let r = try w.shape(x).count
        guard r >= 1 else { throw LayerWriterError("the shape of a scalar is empty") }
        let ys = try w.shape(n.outputs[0])
        try w.needND("getShape")
        let whole = ys == [r]
        let full = whole ? n.outputs[0] : w.freshBlob("\(n.outputs[0])_full")
        var l = w.layer(n.name, inputs: [try w.inputBlob(x)], outputs: [full])
        l.getShape = .init()
        w.add(l)
        if whole { return }
        func clamp(_ v: Int) -> Int { min(max(v < 0 ? v + r : v, 0), r) }
        let start = clamp(int(n, "start", 0)), end = clamp(n.attributes["end"] == nil ? r : int(n, "end", r))
        guard end - start == ys.first ?? -1 else { throw LayerWriterError("shape slice \(start)..<\(end) for output \(ys)") }
        var s = w.layer("\(n.name)_part", inputs: [full], outputs: out(n))
        s.sliceStatic.beginIds = [Int64(start)]; s.sliceStatic.endIds = [Int64(end)]; s.sliceStatic.strides = [1]
        s.sliceStatic.beginMasks = [false]; s.sliceStatic.endMasks = [false]
        w.add(s)
    }

    /// Slice: sliceStatic for constant bounds; sliceDynamic when starts or ends are computed
    /// (their full-rank vectors concatenated from the runtime bounds and zeros; masks cover
    /// the axes not sliced).
    static let sliceAny: Writer = { w, n in
        guard let s = n.input(1), let e = n.input(2) else { throw LayerWriterError("no input") }
        if w.graph.isConstant(s), w.graph.isConstant(e) { try slice(&w, n); return }
        try sliceDynamic(&w, n)
    }

    static func sliceDynamic(_ w: inout NNWriter, _ n: Node) throws {
        guard let x = n.input(0), let s = n.input(1), let e = n.input(2) else { throw LayerWriterError("no input") }
        let xs = try w.shape(x), r = xs.count
        let count = try w.shape(s).reduce(1, *)
        guard try w.shape(e).reduce(1, *) == count else { throw LayerWriterError("starts and ends differ in length") }
        let axes = try n.input(3).map { try w.intValues($0).map { try normalize($0, rank: r) } } ?? Array(0..<count)
        let steps = try n.input(4).map { try w.intValues($0) } ?? Array(repeating: 1, count: count)
        guard axes.count == count, steps.count == count, Set(axes).count == count else {
            throw LayerWriterError("starts, axes and steps differ in length")
        }
        guard steps.allSatisfy({ $0 > 0 }) else { throw LayerWriterError("negative slice steps") }
        try w.needND("sliceDynamic")
        var l = w.layer(n.name, inputs: [try w.inputBlob(x), try fullRank(&w, n, s, axes: axes, rank: r)], outputs: out(n))
        var stride = Array(repeating: Int64(1), count: r), masks = Array(repeating: true, count: r)
        for (k, a) in axes.enumerated() { stride[a] = Int64(steps[k]); masks[a] = false }
        if w.graph.isConstant(e) {
            var end = xs.map { Int64($0) }
            for (k, v) in try w.intValues(e).enumerated() {
                let d = xs[axes[k]]
                end[axes[k]] = Int64(min(max(v < 0 ? v + d : v, 0), d))
            }
            l.sliceDynamic.endIds = end
        } else {
            l.input.append(try fullRank(&w, n, e, axes: axes, rank: r))
        }
        l.sliceDynamic.strides = stride
        l.sliceDynamic.beginMasks = masks
        l.sliceDynamic.endMasks = masks
        w.add(l)
    }

    /// A rank-length vector blob: entry `axes[k]` is element k of `v`, the others 0.
    static func fullRank(_ w: inout NNWriter, _ n: Node, _ v: String, axes: [Int], rank: Int) throws -> String {
        let blob = try w.inputBlob(v)
        if axes == Array(0..<rank) { return flat(&w, n, blob, count: rank, try w.shape(v)) }
        var pieces: [String] = []
        var zeros = 0
        func flushZeros(_ w: inout NNWriter) {
            guard zeros > 0 else { return }
            let z = w.freshBlob("\(n.outputs[0])_zeros")
            var c = w.layer("\(n.name)_zeros", inputs: [], outputs: [z])
            c.loadConstantNd.shape = [UInt64(zeros)]
            c.loadConstantNd.data.floatValue = Array(repeating: 0, count: zeros)
            w.add(c)
            pieces.append(z)
            zeros = 0
        }
        let vector = flat(&w, n, blob, count: axes.count, try w.shape(v))
        for a in 0..<rank {
            guard let k = axes.firstIndex(of: a) else { zeros += 1; continue }
            flushZeros(&w)
            if axes.count == 1 { pieces.append(vector); continue }
            let one = w.freshBlob("\(n.outputs[0])_bound\(a)")
            var p = w.layer("\(n.name)_bound\(a)", inputs: [vector], outputs: [one])
            p.sliceStatic.beginIds = [Int64(k)]; p.sliceStatic.endIds = [Int64(k + 1)]; p.sliceStatic.strides = [1]
            p.sliceStatic.beginMasks = [false]; p.sliceStatic.endMasks = [false]
            w.add(p)
            pieces.append(one)
        }
        flushZeros(&w)
        if pieces.count == 1 { return pieces[0] }
        let full = w.freshBlob("\(n.outputs[0])_bounds")
        var c = w.layer("\(n.name)_bounds", inputs: pieces, outputs: [full])
        c.concatNd.axis = 0
        w.add(c)
        return full
    }

    /// `blob` as a rank-1 vector of `count` elements (a scalar or [1, …] bound reshaped).
    static func flat(_ w: inout NNWriter, _ n: Node, _ blob: String, count: Int, _ shape: [Int]) -> String {
        if shape == [count] { return blob }
        let v = w.freshBlob("\(blob)_vector")
        var l = w.layer("\(n.name)_vector", inputs: [blob], outputs: [v])
        l.reshapeStatic.targetShape = [Int64(count)]
        w.add(l)
        return v
    }
}
