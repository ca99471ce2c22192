// Gemm / MatMul, LRN, Pad, Resize, Gather (embeddings), reductions, ArgMax and LayerNormalization → NeuralNetwork layers.
import CoreMLSchema
import ShrinkwrapIR

extension CoreMLLayerWriters {
    // MARK: linear algebra

    static let gemm: Writer = { w, n in
        guard let a = n.input(0), let b = n.input(1), w.graph.isConstant(b) else {
            throw LayerWriterError("B must be a constant weight")
        }
        if int(n, "transA", 0) != 0 { throw LayerWriterError("transA") }
        if float(n, "alpha", 1) != 1 || (n.input(2) != nil && float(n, "beta", 1) != 1) {
            throw LayerWriterError("alpha or beta ≠ 1")
        }
        let bs = try w.shape(b)
        guard bs.count == 2 else { throw LayerWriterError("B of rank \(bs.count)") }
        let transB = int(n, "transB", 0) != 0
        let (cout, cin) = transB ? (bs[0], bs[1]) : (bs[1], bs[0])
        var p = CoreML_Specification_InnerProductLayerParams()
        p.inputChannels = UInt64(cin); p.outputChannels = UInt64(cout)
        p.weights = try w.weights(b, transpose: transB ? nil : [1, 0])
        if let c = n.input(2) {
            guard w.graph.isConstant(c), try w.shape(c).reduce(1, *) == cout || w.shape(c).reduce(1, *) == 1 else {
                throw LayerWriterError("C must be a constant vector of \(cout)")
            }
            p.hasBias_p = true
            let cc = try w.shape(c).reduce(1, *)
            if cc == cout {
                p.bias = try w.weights(c, reshape: [cout])
            } else {
                guard cc == 1, let v = try w.values(c).first else { throw LayerWriterError("bias of \(cc) values for \(cout) channels") }
                p.bias.floatValue = Array(repeating: v, count: cout)
            }
        }
        try writeInnerProduct(&w, n, input: a, p)
    }

    /// innerProduct contracts the channel axis of a (C, 1, 1) blob in rank-5
    /// mode and the last axis of a rank 1–3 value with exact mapping.
    static func writeInnerProduct(_ w: inout NNWriter, _ n: Node, input a: String, _ p: CoreML_Specification_InnerProductLayerParams) throws {
        let xs = try w.shape(a)
        if w.rank5 {
            guard xs.count == 2 else { throw CoreMLExporter.NeedsExactMapping.signal }
        } else {
            guard (1...3).contains(xs.count) else { throw LayerWriterError("input of rank \(xs.count)") }
        }
        var l = w.layer(n.name, inputs: [try w.inputBlob(a)], outputs: out(n))
        l.innerProduct = p
        w.markUpdatable(&l, n)
        w.add(l)
    }

    static let matmul: Writer = { w, n in
        guard let a = n.input(0), let b = n.input(1) else { throw LayerWriterError("no input") }
        if w.graph.isConstant(b), try w.shape(b).count == 2, try (w.rank5 ? 2...2 : 1...3).contains(w.shape(a).count) {
            let bs = try w.shape(b)
            var p = CoreML_Specification_InnerProductLayerParams()
            p.inputChannels = UInt64(bs[0]); p.outputChannels = UInt64(bs[1])
            p.weights = try w.weights(b, transpose: [1, 0])
            try writeInnerProduct(&w, n, input: a, p)
            return
        }
        try w.needND("batchedMatmul")
        var l = w.layer(n.name, inputs: [try w.inputBlob(a), try w.inputBlob(b)], outputs: out(n))
        l.batchedMatmul = .init()
        w.add(l)
    }

    static let lrn: Writer = { w, n in
        guard let x = n.input(0) else { throw LayerWriterError("no input") }
        var l = w.layer(n.name, inputs: [try w.inputBlob(x)], outputs: out(n))
        l.lrn.alpha = float(n, "alpha", 1e-4)
        l.lrn.beta = float(n, "beta", 0.75)
        l.lrn.k = float(n, "bias", 1)
        let size = int(n, "size", 1)
        guard size >= 1 else { throw LayerWriterError("size \(size)") }
        l.lrn.localSize = UInt64(size)
        w.add(l)
    }

    static let pad: Writer = { w, n in
        guard let x = n.input(0), let pi = n.input(1) else { throw LayerWriterError("no input") }
        let xs = try w.shape(x)
        let r = xs.count
        let pads = try w.intValues(pi)
        guard pads.allSatisfy({ $0 >= 0 }) else { throw LayerWriterError("negative pads (cropping)") }
        var axes = Array(0..<r)
        if let ai = n.input(3) { axes = try w.intValues(ai).map { try normalize($0, rank: r) } }
        guard pads.count == 2 * axes.count else { throw LayerWriterError("pads \(pads) for \(axes.count) axes") }
        var begin = Array(repeating: 0, count: r), end = Array(repeating: 0, count: r)
        for (i, a) in axes.enumerated() { begin[a] = pads[i]; end[a] = pads[i + axes.count] }
        let value = try n.input(2).map { try w.values($0).first ?? 0 } ?? 0
        let mode = string(n, "mode", "constant")
        let trailingOnly = r >= 2 && (0..<(r - 2)).allSatisfy { begin[$0] == 0 && end[$0] == 0 }
        // The padding layer pads the last two axes of any rank ≥ 2 (N-dimensional
        // unless rank 4); constant pads of other ranks keep the constantPad layer.
        if trailingOnly, r != 4, mode != "constant" { try w.needND("padding of rank \(r)") }
        var l = w.layer(n.name, inputs: [try w.inputBlob(x)], outputs: out(n))
        if trailingOnly && (r == 4 || mode != "constant") {
            l.padding.paddingAmounts.borderAmounts = ((r - 2)..<r).map { a in
                var e = CoreML_Specification_BorderAmounts.EdgeSizes()
                e.startEdgeSize = UInt64(begin[a]); e.endEdgeSize = UInt64(end[a])
                return e
            }
            switch mode {
            case "constant": l.padding.constant.value = value
            case "reflect": l.padding.reflection = .init()
            case "edge": l.padding.replication = .init()
            default: throw LayerWriterError("pad mode \(mode)")
            }
        } else {
            guard mode == "constant" else { throw LayerWriterError("\(mode) padding of an axis other than the last two (axes \((0..<r).filter { begin[$0] + end[$0] > 0 }) of rank \(r))") }
            try w.needND("constantPad")
            l.constantPad.value = value
            l.constantPad.padAmounts = (0..<r).flatMap { [UInt64(begin[$0]), UInt64(end[$0])] }
        }
        w.add(l)
    }

    static let resize: Writer = { w, n in
        guard let x = n.input(0) else { throw LayerWriterError("no input") }
        let xs = try w.shape(x), ys = try w.shape(n.outputs[0])
        guard xs.count == 4, ys.count == 4, ys[0] == xs[0], ys[1] == xs[1] else { throw LayerWriterError("only spatial resizing of rank-4 values") }
        guard xs[2] > 0, xs[3] > 0 else { throw LayerWriterError("resizing an empty value \(xs)") }
        let mode = string(n, "mode", "nearest")
        let ct = string(n, "coordinate_transformation_mode", "half_pixel")
        var l = w.layer(n.name, inputs: [try w.inputBlob(x)], outputs: out(n))
        let integer = ys[2] % xs[2] == 0 && ys[3] % xs[3] == 0
        switch mode {
        case "nearest":
            // Core ML's nearest upsampling reads input ⌊i / s⌋ (`nearestResizeFloorsQuotient`).
            guard integer else { throw LayerWriterError("nearest resizing by a non-integer factor") }
            guard n.nearestResizeFloorsQuotient else {
                throw LayerWriterError("nearest resizing with \(ct) coordinates and \(string(n, "nearest_mode", "round_prefer_floor")) rounding")
            }
            l.upsample.scalingFactor = [UInt64(ys[2] / xs[2]), UInt64(ys[3] / xs[3])]
            l.upsample.mode = .nn
        case "linear":
            switch ct {
            case "align_corners":
                l.resizeBilinear.targetSize = [UInt64(ys[2]), UInt64(ys[3])]
                l.resizeBilinear.mode.samplingMethod = .strictAlignEndpointsMode
                w.require(3, "resizeBilinear")
            case "asymmetric":
                guard integer else { throw LayerWriterError("bilinear resizing by a non-integer factor") }
                l.upsample.scalingFactor = [UInt64(ys[2] / xs[2]), UInt64(ys[3] / xs[3])]
                l.upsample.mode = .bilinear
            case "half_pixel", "pytorch_half_pixel":
                guard integer else { throw LayerWriterError("bilinear resizing by a non-integer factor") }
                try w.needND("upsample with half-pixel coordinates")
                l.upsample.scalingFactor = [UInt64(ys[2] / xs[2]), UInt64(ys[3] / xs[3])]
                l.upsample.mode = .bilinear
                l.upsample.linearUpsampleMode = .alignCornersFalse
                w.require(5, "upsample with half-pixel coordinates")
            default: throw LayerWriterError("bilinear resizing with \(ct) coordinates")
            }
        default: throw LayerWriterError("\(mode) resizing")
        }
        w.add(l)
    }

    static let gather: Writer = { w, n in
        guard let data = n.input(0), let idx = n.input(1) else { throw LayerWriterError("no input") }
        let ds = try w.shape(data)
        let axis = try normalize(int(n, "axis", 0), rank: ds.count)
        try w.needND("gather")
        if w.graph.isConstant(data), ds.count == 2, axis == 0, !w.graph.isConstant(idx) {
            // A table lookup: embeddingND reads [vocab, dim] as weights [dim, vocab] and needs a trailing index axis of 1.
            let ins = try w.shape(idx)
            let x1 = w.freshBlob("\(n.outputs[0])_ids")
            var e = w.layer("\(n.name)_expand", inputs: [try w.inputBlob(idx)], outputs: [x1])
            e.expandDims.axes = [Int64(ins.count)]
            w.add(e)
            var l = w.layer(n.name, inputs: [x1], outputs: out(n))
            l.embeddingNd.vocabSize = UInt64(ds[0])
            l.embeddingNd.embeddingSize = UInt64(ds[1])
            if case .affine(let a)? = w.graph.constant(named: data)?.encoding, a.scale.count > 1, a.blockShape[0] == 1 {
                try perRowEmbedding(&w, n, a, ids: x1, layer: l)
                return
            }
            l.embeddingNd.weights = try w.weights(data, transpose: [1, 0])
            w.markUpdatable(&l, n)
            w.add(l)
            return
        }
        var l = w.layer(n.name, inputs: [try w.inputBlob(data), try w.inputBlob(idx)], outputs: out(n))
        l.gather.axis = Int64(axis)
        w.add(l)
    }

    /// A table quantized with one scale per row (per vocabulary entry, how the compress pass
    /// quantizes embeddings) has no single Core ML weight: embeddingND scales its output
    /// channels, which are the table's columns. So the codes go into one embedding (scale 1),
    /// each row's scale and offset into a second, [vocab, 2] float table, and
    /// y = codes[ids] × scale[ids] + offset[ids] follows — the same storage, exactly the IR's values.
    static func perRowEmbedding(_ w: inout NNWriter, _ n: Node, _ a: AffineWeights, ids: String,
                                layer: CoreML_Specification_NeuralNetworkLayer) throws {
        guard a.shape.count == 2, a.blockShape.count == 2 else { throw LayerWriterError("table of shape \(a.shape)") }
        let (vocab, dim) = (a.shape[0], a.shape[1])
        guard a.blockShape[1] >= dim, a.scale.count == vocab else {
            throw LayerWriterError("table scales of block shape \(a.blockShape)")
        }
        let data = n.inputs[0], y = n.outputs[0]
        let codes = WeightEncoding.affine(try AffineWeights(shape: a.shape, bits: a.bits, signed: a.signed, q: a.q,
                                                            blockShape: a.shape, scale: [1], bias: [0]))
        var l = layer
        l.output = [w.freshBlob("\(y)_codes")]
        l.embeddingNd.weights = try w.params(codes, name: data) { e throws(WeightLayoutError) in try e.transposed([1, 0]) }
        w.markUpdatable(&l, n)
        w.add(l)
        var t = w.layer("\(n.name)_row_scale", inputs: [ids], outputs: [w.freshBlob("\(y)_row_affine")])
        t.embeddingNd.vocabSize = UInt64(vocab)
        t.embeddingNd.embeddingSize = 2
        t.embeddingNd.weights.floatValue = a.scale + a.bias  // [2, vocab]: scales, then offsets
        w.add(t)
        let parts = [w.freshBlob("\(y)_row_s"), w.freshBlob("\(y)_row_b")]
        var sp = w.layer("\(n.name)_row_split", inputs: t.output, outputs: parts)
        sp.splitNd.axis = -1; sp.splitNd.numSplits = 2; sp.splitNd.splitSizes = [1, 1]
        w.add(sp)
        let scaled = w.freshBlob("\(y)_scaled")
        var m = w.layer("\(n.name)_row_mul", inputs: [l.output[0], parts[0]], outputs: [scaled])
        m.multiplyBroadcastable = .init()
        w.add(m)
        var ad = w.layer("\(n.name)_row_add", inputs: [scaled, parts[1]], outputs: [y])
        ad.addBroadcastable = .init()
        w.add(ad)
    }

    static let reduce: Writer = { w, n in
        guard let x = n.input(0) else { throw LayerWriterError("no input") }
        let r = try w.shape(x).count
        var axes: [Int]? = ints(n, "axes")
        if let ai = n.input(1) { axes = try w.intValues(ai) }
        let keep = int(n, "keepdims", 1) != 0
        if axes?.isEmpty ?? true, int(n, "noop_with_empty_axes", 0) != 0 {
            if !w.isGraphOutput(n.outputs[0]) { w.setAlias(n.outputs[0], to: try w.inputBlob(x)); return }
        }
        let all = axes?.isEmpty ?? true
        let norm = try (axes ?? []).map { Int64(try normalize($0, rank: r)) }
        try w.needND("reduce")
        var l = w.layer(n.name, inputs: [try w.inputBlob(x)], outputs: out(n))
        func set<T: ReduceND>(_ p: inout T) { p.axes = norm; p.keepDims = keep; p.reduceAll = all }
        switch n.opType {
        case "ReduceSum": var p = CoreML_Specification_ReduceSumLayerParams(); set(&p); l.reduceSum = p
        case "ReduceMean": var p = CoreML_Specification_ReduceMeanLayerParams(); set(&p); l.reduceMean = p
        case "ReduceMax": var p = CoreML_Specification_ReduceMaxLayerParams(); set(&p); l.reduceMax = p
        case "ReduceMin": var p = CoreML_Specification_ReduceMinLayerParams(); set(&p); l.reduceMin = p
        case "ReduceProd": var p = CoreML_Specification_ReduceProdLayerParams(); set(&p); l.reduceProd = p
        case "ReduceL1": var p = CoreML_Specification_ReduceL1LayerParams(); set(&p); l.reduceL1 = p
        case "ReduceL2": var p = CoreML_Specification_ReduceL2LayerParams(); set(&p); l.reduceL2 = p
        case "ReduceLogSum": var p = CoreML_Specification_ReduceLogSumLayerParams(); set(&p); l.reduceLogSum = p
        case "ReduceLogSumExp": var p = CoreML_Specification_ReduceLogSumExpLayerParams(); set(&p); l.reduceLogSumExp = p
        default: var p = CoreML_Specification_ReduceSumSquareLayerParams(); set(&p); l.reduceSumSquare = p
        }
        w.add(l)
    }

    static let argMax: Writer = { w, n in
        guard let x = n.input(0) else { throw LayerWriterError("no input") }
        if int(n, "select_last_index", 0) != 0 { throw LayerWriterError("select_last_index") }
        let r = try w.shape(x).count
        try w.needND("argMax")
        var l = w.layer(n.name, inputs: [try w.inputBlob(x)], outputs: out(n))
        l.argMax.axis = Int64(try normalize(int(n, "axis", 0), rank: r))
        l.argMax.removeDim = int(n, "keepdims", 1) == 0
        w.add(l)
    }

    static let layerNorm: Writer = { w, n in
        guard let x = n.input(0), let g = n.input(1), w.graph.isConstant(g) else { throw LayerWriterError("scale must be a constant") }
        let xs = try w.shape(x)
        let axis = try normalize(int(n, "axis", -1), rank: xs.count)
        let normalized = Array(xs[axis...])
        let count = normalized.reduce(1, *)
        if n.outputs.count > 1, n.outputs[1...].contains(where: { !$0.isEmpty }) { throw LayerWriterError("mean / inv-std outputs") }
        try w.needND("layerNormalization")
        var l = w.layer(n.name, inputs: [try w.inputBlob(x)], outputs: out(n))
        l.layerNormalization.normalizedShape = normalized.map { Int64($0) }
        l.layerNormalization.eps = float(n, "epsilon", 1e-5)
        l.layerNormalization.gamma = try w.weights(g, reshape: [count])
        if let b = n.input(2) {
            guard w.graph.isConstant(b) else { throw LayerWriterError("bias must be a constant") }
            l.layerNormalization.beta = try w.weights(b, reshape: [count])
        } else {
            l.layerNormalization.beta.floatValue = Array(repeating: 0, count: count)
        }
        w.add(l)
    }
}
