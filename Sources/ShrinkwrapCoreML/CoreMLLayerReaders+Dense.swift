// Classic NeuralNetwork layers: inner product, embeddings, normalization, padding, resizing, element-wise, reduce, reshape, concat / split / slice.
import CoreMLSchema
import ShrinkwrapIR

extension CoreMLLayerReaders {
    // MARK: dense layers

    /// y = x · Wᵀ + b over the last axis (rank 1–3), or over C·H·W of a rank-4 blob.
    static let innerProduct: Reader = { b, l, p in
        let q = l.innerProduct
        if q.int8DynamicQuantize { throw LayerReaderError("int8 dynamic quantization") }
        let (x, y) = try one(&b, l, p)
        let cin = try dim(q.inputChannels, "inputChannels", b, p), cout = try dim(q.outputChannels, "outputChannels", b, p)
        let we = try b.weight(q.weights, shape: [cout, cin], place: "\(p) weights")
        let bias = q.hasBias_p ? b.constant("\(l.name)_bias", try b.weight(q.bias, shape: [cout], place: "\(p) bias")) : ""
        let r = try rank(b, x)
        func gemm(_ input: String, _ output: String) {
            let w = b.constant("\(l.name)_weights", we)
            b.node("Gemm", l.name, bias.isEmpty ? [input, w] : [input, w, bias], [output], ["transB": .int(1)], rank: 2)
        }
        switch r {
        case 2: gemm(x, y)
        case 1, 3:
            let wt: WeightEncoding
            do throws(WeightLayoutError) { wt = try we.transposed([1, 0]) } catch { throw LayerReaderError(error.reason) }
            let w = b.constant("\(l.name)_weights", wt)
            if bias.isEmpty {
                b.node("MatMul", l.name, [x, w], [y], rank: r)
            } else {
                let t = b.temp("\(l.name)_matmul")
                b.node("MatMul", "\(l.name)_matmul", [x, w], [t], rank: r)
                b.node("Add", l.name, [t, bias], [y], rank: r)
            }
        case 4, 5:
            // Contract the last three axes: [..., C, H, W] → [..., Cout, 1, 1].
            let lead = r - 3
            let flat = b.temp("\(l.name)_flat"), mm = b.temp("\(l.name)_gemm")
            b.node("Flatten", "\(l.name)_flatten", [x], [flat], ["axis": .int(lead)], rank: 2)
            gemm(flat, mm)
            let lastShape = r == 4 ? [-1, cout, 1, 1] : [1, -1, cout, 1, 1]
            b.node("Reshape", "\(l.name)_reshape", [mm, b.ints("\(l.name)_shape", lastShape)], [y], rank: r)
        default: throw LayerReaderError("input of rank \(r)")
        }
    }

    /// Indices (as floats) → rows of the table.
    static func lookup(_ b: inout GraphBuilderState, _ l: Layer, _ p: String, table: WeightEncoding, bias: String,
                       ids: String, output: String, rank r: Int) throws {
        let idx = b.temp("\(l.name)_ids")
        b.node("Cast", "\(l.name)_cast", [ids], [idx], ["to": .int(7)], rank: r)
        let w = b.constant("\(l.name)_weights", table)
        if bias.isEmpty {
            b.node("Gather", l.name, [w, idx], [output], ["axis": .int(0)], rank: r + 1)
        } else {
            let t = b.temp("\(l.name)_rows")
            b.node("Gather", l.name, [w, idx], [t], ["axis": .int(0)], rank: r + 1)
            b.node("Add", "\(l.name)_bias", [t, bias], [output], rank: r + 1)
        }
    }

    static let embedding: Reader = { b, l, p in
        let q = l.embedding
        let (x, y) = try one(&b, l, p)
        let vocab = try dim(q.inputDim, "inputDim", b, p), out = try dim(q.outputChannels, "outputChannels", b, p)
        let we = try b.weight(q.weights, shape: [out, vocab], place: "\(p) weights")
        let table: WeightEncoding
        do throws(WeightLayoutError) { table = try we.transposed([1, 0]) } catch { throw LayerReaderError(error.reason) }
        let bias = q.hasBias_p ? b.constant("\(l.name)_bias", try b.weight(q.bias, shape: [out], place: "\(p) bias")) : ""
        // (..., 1, 1, 1) indices → (..., out, 1, 1).
        let r = try rank(b, x)
        guard r >= 4 else { throw LayerReaderError("input of rank \(r) (expected [..., 1, 1, 1])") }
        let sq = b.temp("\(l.name)_squeezed"), rows = b.temp("\(l.name)_rows")
        b.node("Squeeze", "\(l.name)_squeeze", [x, b.ints("\(l.name)_axes", [-3, -2, -1])], [sq], rank: r - 3)
        try lookup(&b, l, p, table: table, bias: bias, ids: sq, output: rows, rank: r - 3)
        b.node("Unsqueeze", "\(l.name)_unsqueeze", [rows, b.ints("\(l.name)_hw", [-2, -1])], [y], rank: r)
    }

    static let embeddingND: Reader = { b, l, p in
        let q = l.embeddingNd
        let (x, y) = try one(&b, l, p)
        let vocab = try dim(q.vocabSize, "vocabSize", b, p), out = try dim(q.embeddingSize, "embeddingSize", b, p)
        let we = try b.weight(q.weights, shape: [out, vocab], place: "\(p) weights")
        let table: WeightEncoding
        do throws(WeightLayoutError) { table = try we.transposed([1, 0]) } catch { throw LayerReaderError(error.reason) }
        let bias = q.hasBias_p ? b.constant("\(l.name)_bias", try b.weight(q.bias, shape: [out], place: "\(p) bias")) : ""
        let r = try rank(b, x)
        guard r >= 2 else { throw LayerReaderError("input of rank \(r) (expected [..., 1])") }
        let sq = b.temp("\(l.name)_squeezed")
        b.node("Squeeze", "\(l.name)_squeeze", [x, b.ints("\(l.name)_axes", [-1])], [sq], rank: r - 1)
        try lookup(&b, l, p, table: table, bias: bias, ids: sq, output: y, rank: r - 1)
    }

    static let batchnorm: Reader = { b, l, p in
        let q = l.batchnorm
        let (x, y) = try one(&b, l, p)
        let c = try dim(q.channels, "channels", b, p)
        let r = try rank(b, x)
        let eps = q.epsilon == 0 ? Float(1e-5) : q.epsilon
        guard r >= 3 else { throw LayerReaderError("input of rank \(r) (batchnorm needs [..., C, H, W])") }
        let gamma = b.constant("\(l.name)_gamma", try b.weight(q.gamma, shape: [c], place: "\(p) gamma"))
        let beta = b.constant("\(l.name)_beta", try b.weight(q.beta, shape: [c], place: "\(p) beta"))
        var input = x, output = y
        var shapeOf = ""
        if r == 3 {
            input = b.temp("\(l.name)_4d"); output = b.temp("\(l.name)_out4d")
            b.node("Unsqueeze", "\(l.name)_to4d", [x, b.ints("\(l.name)_axis0", [0])], [input], rank: 4)
        } else if r > 4 {
            // Channel axis −3 of a higher rank: view as [N, C, H, W] and back.
            input = b.temp("\(l.name)_4d"); output = b.temp("\(l.name)_out4d")
            shapeOf = b.temp("\(l.name)_shape_of")
            let tail = b.temp("\(l.name)_chw"), full = b.temp("\(l.name)_nchw")
            b.node("Shape", "\(l.name)_shape", [x], [shapeOf], rank: 1)
            b.node("Slice", "\(l.name)_tail", [shapeOf, b.ints("\(l.name)_s", [-3]), b.ints("\(l.name)_e", [Int(Int32.max)])], [tail], rank: 1)
            b.node("Concat", "\(l.name)_nchw_shape", [b.ints("\(l.name)_lead", [-1]), tail], [full], ["axis": .int(0)], rank: 1)
            b.node("Reshape", "\(l.name)_to4d", [x, full], [input], rank: 4)
        }
        if q.computeMeanVar {
            guard q.instanceNormalization else { throw LayerReaderError("batch statistics computed at run time") }
            b.node("InstanceNormalization", l.name, [input, gamma, beta], [output], ["epsilon": .float(eps)], rank: 4)
        } else {
            let mean = b.constant("\(l.name)_mean", try b.weight(q.mean, shape: [c], place: "\(p) mean"))
            let variance = b.constant("\(l.name)_variance", try b.weight(q.variance, shape: [c], place: "\(p) variance"))
            b.node("BatchNormalization", l.name, [input, gamma, beta, mean, variance], [output], ["epsilon": .float(eps)], rank: 4)
        }
        if r == 3 {
            b.node("Squeeze", "\(l.name)_from4d", [output, b.ints("\(l.name)_axis0b", [0])], [y], rank: 3)
        } else if r > 4 {
            b.node("Reshape", "\(l.name)_from4d", [output, shapeOf], [y], rank: r)
        }
    }

    static let softmax: Reader = { b, l, p in
        let (x, y) = try one(&b, l, p)
        let axis = { if case .softmaxNd(let s)? = l.layer { return Int(s.axis) } else { return -3 } }()
        b.node("Softmax", l.name, [x], [y], ["axis": .int(axis)], rank: b.ranks[x])
    }

    static let lrn: Reader = { b, l, p in
        let (x, y) = try one(&b, l, p)
        let q = l.lrn
        let size = try dim(q.localSize, "localSize", b, p)
        guard try rank(b, x) == 4 else { throw LayerReaderError("LRN on a value that is not [N, C, H, W]") }
        b.node("LRN", l.name, [x], [y], ["alpha": .float(q.alpha), "beta": .float(q.beta), "bias": .float(q.k == 0 ? 1 : q.k),
                                           "size": .int(size)], rank: 4)
    }

    /// reorganizeData: DEPTH_TO_SPACE is ONNX's DCR DepthToSpace, PIXEL_SHUFFLE its CRD one.
    static let reorganizeData: Reader = { b, l, p in
        let (x, y) = try one(&b, l, p)
        let q = l.reorganizeData
        let size = try dim(q.blockSize, "blockSize", b, p)
        guard size >= 1 else { throw LayerReaderError("blockSize 0") }
        guard try rank(b, x) == 4 else { throw LayerReaderError("data reorganization of a value that is not [N, C, H, W]") }
        switch q.mode {
        case .spaceToDepth: b.node("SpaceToDepth", l.name, [x], [y], ["blocksize": .int(size)], rank: 4)
        case .depthToSpace: b.node("DepthToSpace", l.name, [x], [y], ["blocksize": .int(size), "mode": .string("DCR")], rank: 4)
        case .pixelShuffle: b.node("DepthToSpace", l.name, [x], [y], ["blocksize": .int(size), "mode": .string("CRD")], rank: 4)
        case .UNRECOGNIZED(let v): throw LayerReaderError("reorganization mode \(v)")
        }
    }

    static let padding: Reader = { b, l, p in
        let (x, y) = try one(&b, l, p)
        let r = try rank(b, x)
        if case .constantPad(let c)? = l.layer {
            if c.padToGivenOutputSizeMode { throw LayerReaderError("padToGivenOutputSizeMode") }
            guard c.padAmounts.count == 2 * r, c.padAmounts.allSatisfy({ $0 <= 1 << 20 }) else {
                throw ImportError.malformed(b.loc(p), reason: "\(c.padAmounts.count) pad amounts for rank \(r)")
            }
            let a = c.padAmounts.map { Int($0) }
            let pads = (0..<r).map { a[2 * $0] } + (0..<r).map { a[2 * $0 + 1] }
            b.node("Pad", l.name, [x, b.ints("\(l.name)_pads", pads), b.floats("\(l.name)_value", [c.value], shape: [])], [y],
                   ["mode": .string("constant")], rank: r)
            return
        }
        let q = l.padding
        let pp = try pads(b, q.paddingAmounts, p)  // [top, left, bottom, right]
        var inputs = [x, b.ints("\(l.name)_pads", pp)]
        let mode: String
        switch q.paddingType {
        case .constant(let c)?: mode = "constant"; inputs.append(b.floats("\(l.name)_value", [c.value], shape: []))
        case .reflection?: mode = "reflect"; inputs.append("")
        case .replication?: mode = "edge"; inputs.append("")
        case nil: throw ImportError.malformed(b.loc(p), reason: "padding without a type")
        }
        inputs.append(b.ints("\(l.name)_axes", [-2, -1]))
        b.node("Pad", l.name, inputs, [y], ["mode": .string(mode)], rank: r)
    }

    static let upsample: Reader = { b, l, p in
        let (x, y) = try one(&b, l, p)
        let q = l.upsample
        let r = try rank(b, x)
        var scales: [Float]
        if !q.fractionalScalingFactor.isEmpty {
            guard q.fractionalScalingFactor.count == 2, q.fractionalScalingFactor.allSatisfy({ $0 > 0 && $0 < 1e4 }) else {
                throw ImportError.malformed(b.loc(p), reason: "fractionalScalingFactor")
            }
            scales = q.fractionalScalingFactor
        } else {
            let f = q.scalingFactor.isEmpty ? [1, 1] : q.scalingFactor.map { $0 == 0 ? 1 : $0 }
            guard f.count == 2, f.allSatisfy({ $0 <= 1 << 12 }) else { throw ImportError.malformed(b.loc(p), reason: "scalingFactor \(q.scalingFactor)") }
            scales = f.map { Float($0) }
        }
        var a: [String: Attribute] = [:]
        switch q.mode {
        case .nn:
            a["mode"] = .string("nearest"); a["coordinate_transformation_mode"] = .string("asymmetric"); a["nearest_mode"] = .string("floor")
        case .bilinear:
            a["mode"] = .string("linear")
            switch q.linearUpsampleMode {
            case .default: a["coordinate_transformation_mode"] = .string("asymmetric")
            case .alignCornersTrue: a["coordinate_transformation_mode"] = .string("align_corners")
            case .alignCornersFalse: a["coordinate_transformation_mode"] = .string("half_pixel")
            case .UNRECOGNIZED(let v): throw LayerReaderError("linear upsample mode \(v)")
            }
        case .UNRECOGNIZED(let v): throw LayerReaderError("interpolation mode \(v)")
        }
        guard r >= 3 else { throw LayerReaderError("input of rank \(r) (upsampling needs [..., C, H, W])") }
        scales = Array(repeating: 1, count: r - 2) + scales
        b.node("Resize", l.name, [x, "", b.floats("\(l.name)_scales", scales)], [y], a, rank: r)
    }

    static let resizeBilinear: Reader = { b, l, p in
        let (x, y) = try one(&b, l, p)
        let q = l.resizeBilinear
        let r = try rank(b, x)
        let size = q.targetSize.isEmpty ? [1, 1] : try q.targetSize.map { try dim($0, "targetSize", b, p) }
        guard size.count == 2 else { throw ImportError.malformed(b.loc(p), reason: "targetSize needs 2 values") }
        let ct: String
        switch q.mode.samplingMethod {
        case .strictAlignEndpointsMode: ct = "align_corners"
        case .alignEndpointsMode:
            guard size.allSatisfy({ $0 > 1 }) else { throw LayerReaderError("ALIGN_ENDPOINTS_MODE to a size of 1") }
            ct = "align_corners"
        case .upsampleMode: ct = "asymmetric"
        default: throw LayerReaderError("sampling mode \(q.mode.samplingMethod)")
        }
        // Output size [.., H', W']: from the input's leading dims at run time.
        let shapeOf = b.temp("\(l.name)_in_shape"), lead = b.temp("\(l.name)_lead"), sizes = b.temp("\(l.name)_sizes")
        b.node("Shape", "\(l.name)_shape", [x], [shapeOf], rank: 1)
        b.node("Slice", "\(l.name)_lead", [shapeOf, b.ints("\(l.name)_s", [0]), b.ints("\(l.name)_e", [-2])], [lead], rank: 1)
        b.node("Concat", "\(l.name)_sizes", [lead, b.ints("\(l.name)_hw", size)], [sizes], ["axis": .int(0)], rank: 1)
        b.node("Resize", l.name, [x, "", "", sizes], [y], ["mode": .string("linear"), "coordinate_transformation_mode": .string(ct)], rank: r)
    }

    static let unary: Reader = { b, l, p in
        let (x, y) = try one(&b, l, p)
        let q = l.unary
        let r = b.ranks[x]
        var v = x
        let scale = q.scale == 0 ? Float(1) : q.scale
        if scale != 1 {
            let t = b.temp("\(l.name)_scaled")
            v = b.node("Mul", "\(l.name)_scale", [v, b.floats("\(l.name)_scale", [scale], shape: [])], [t], rank: r)
        }
        if q.shift != 0 {
            let t = b.temp("\(l.name)_shifted")
            v = b.node("Add", "\(l.name)_shift", [v, b.floats("\(l.name)_shift", [q.shift], shape: [])], [t], rank: r)
        }
        let eps = q.epsilon == 0 ? Float(1e-6) : q.epsilon
        func plusEps() -> String {
            let t = b.temp("\(l.name)_eps")
            return b.node("Add", "\(l.name)_epsilon", [v, b.floats("\(l.name)_epsilon", [eps], shape: [])], [t], rank: r)
        }
        switch q.type {
        case .sqrt: b.node("Sqrt", l.name, [v], [y], rank: r)
        case .rsqrt:
            let s = b.temp("\(l.name)_sqrt")
            b.node("Sqrt", "\(l.name)_sqrt", [plusEps()], [s], rank: r)
            b.node("Reciprocal", l.name, [s], [y], rank: r)
        case .inverse: b.node("Reciprocal", l.name, [plusEps()], [y], rank: r)
        case .power: b.node("Pow", l.name, [v, b.floats("\(l.name)_exponent", [q.alpha], shape: [])], [y], rank: r)
        case .exp: b.node("Exp", l.name, [v], [y], rank: r)
        case .log: b.node("Log", l.name, [v], [y], rank: r)
        case .abs: b.node("Abs", l.name, [v], [y], rank: r)
        case .threshold: b.node("Max", l.name, [v, b.floats("\(l.name)_threshold", [q.alpha], shape: [])], [y], rank: r)
        case .UNRECOGNIZED(let t): throw LayerReaderError("unary function \(t)")
        }
    }

    /// add / multiply / average / max / min: one input with alpha, or several (numpy broadcasting covers Core ML's).
    static let multiInput: Reader = { b, l, p in
        guard !l.input.isEmpty, l.output.count == 1 else { throw ImportError.malformed(b.loc(p), reason: "needs inputs and one output") }
        let xs = try l.input.map { try b.value($0, place: p) }
        let y = try b.define(l.output[0], place: p)
        let r = xs.compactMap { b.ranks[$0] }.max()
        let op: String
        switch l.layer {
        case .add(let a)?:
            if xs.count == 1 { b.node("Add", l.name, [xs[0], b.floats("\(l.name)_alpha", [a.alpha], shape: [])], [y], rank: r); return }
            op = "Sum"
        case .multiply(let a)?:
            if xs.count == 1 { b.node("Mul", l.name, [xs[0], b.floats("\(l.name)_alpha", [a.alpha], shape: [])], [y], rank: r); return }
            op = "Mul"
        case .average?: op = "Mean"
        case .max?: op = "Max"
        default: op = "Min"
        }
        if xs.count == 1 { b.node("Identity", l.name, xs, [y], rank: r); return }
        if op == "Mul", xs.count > 2 {
            var acc = xs[0]
            for (i, x) in xs.dropFirst().enumerated() {
                let o = i == xs.count - 2 ? y : b.temp("\(l.name)_part\(i)")
                acc = b.node("Mul", i == xs.count - 2 ? l.name : "\(l.name)_\(i)", [acc, x], [o], rank: r)
            }
            return
        }
        b.node(op, l.name, xs, [y], rank: r)
    }

    /// scale / bias: constants of shape [1], [C], [1, H, W] or [C, H, W] against the last three axes.
    static let scaleBias: Reader = { b, l, p in
        let (x, y) = try one(&b, l, p)
        let r = try rank(b, x)
        func param(_ w: CoreML_Specification_WeightParams, _ s: [UInt64], _ what: String) throws -> String {
            let dims = try s.map { try dim($0, "\(what) shape", b, p) }
            let shape: [Int]
            switch dims.count {
            case 0: shape = [1]
            case 1: shape = dims[0] == 1 ? [1] : [dims[0], 1, 1]
            case 3: shape = dims
            default: throw ImportError.malformed(b.loc(p), reason: "\(what) shape \(s) (expected 1 or 3 values)")
            }
            if shape.count == 3 { guard r >= 3 else { throw LayerReaderError("input of rank \(r)") } }
            return b.constant("\(l.name)_\(what)", try b.weight(w, shape: shape, place: "\(p) \(what)"))
        }
        if case .bias(let q)? = l.layer {
            b.node("Add", l.name, [x, try param(q.bias, q.shape, "bias")], [y], rank: r)
            return
        }
        let q = l.scale
        let s = try param(q.scale, q.shapeScale, "scale")
        if q.hasBias_p {
            let t = b.temp("\(l.name)_scaled")
            b.node("Mul", "\(l.name)_scale", [x, s], [t], rank: r)
            b.node("Add", l.name, [t, try param(q.bias, q.shapeBias, "bias")], [y], rank: r)
        } else {
            b.node("Mul", l.name, [x, s], [y], rank: r)
        }
    }

    static let reduceClassic: Reader = { b, l, p in
        let (x, y) = try one(&b, l, p)
        let q = l.reduce
        let r = try rank(b, x)
        let axes: [Int]
        switch q.axis {
        case .chw: axes = [-3, -2, -1]
        case .hw: axes = [-2, -1]
        case .c: axes = [-3]
        case .h: axes = [-2]
        case .w: axes = [-1]
        case .UNRECOGNIZED(let v): throw LayerReaderError("reduce axis \(v)")
        }
        guard r >= -axes[0] else { throw LayerReaderError("input of rank \(r)") }
        let axesConst = b.ints("\(l.name)_axes", axes)
        let keep: [String: Attribute] = ["keepdims": .int(1)]
        switch q.mode {
        case .sum: b.node("ReduceSum", l.name, [x, axesConst], [y], keep, rank: r)
        case .avg: b.node("ReduceMean", l.name, [x, axesConst], [y], keep, rank: r)
        case .prod: b.node("ReduceProd", l.name, [x, axesConst], [y], keep, rank: r)
        case .sumsquare: b.node("ReduceSumSquare", l.name, [x, axesConst], [y], keep, rank: r)
        case .l1: b.node("ReduceL1", l.name, [x, axesConst], [y], keep, rank: r)
        case .l2: b.node("ReduceL2", l.name, [x, axesConst], [y], keep, rank: r)
        case .max: b.node("ReduceMax", l.name, [x, axesConst], [y], keep, rank: r)
        case .min: b.node("ReduceMin", l.name, [x, axesConst], [y], keep, rank: r)
        case .logsum:
            // Core ML: Σ log(x + ε).
            let eps = q.epsilon == 0 ? Float(1e-6) : q.epsilon
            let t = b.temp("\(l.name)_eps"), lg = b.temp("\(l.name)_log")
            b.node("Add", "\(l.name)_epsilon", [x, b.floats("\(l.name)_epsilon", [eps], shape: [])], [t], rank: r)
            b.node("Log", "\(l.name)_log", [t], [lg], rank: r)
            b.node("ReduceSum", l.name, [lg, axesConst], [y], keep, rank: r)
        case .argmax:
            guard axes.count == 1 else { throw LayerReaderError("ARGMAX over several axes") }
            let t = b.temp("\(l.name)_index")
            b.node("ArgMax", "\(l.name)_argmax", [x], [t], ["axis": .int(axes[0]), "keepdims": .int(1)], rank: r)
            b.node("Cast", l.name, [t], [y], ["to": .int(1)], rank: r)
        case .UNRECOGNIZED(let v): throw LayerReaderError("reduce mode \(v)")
        }
    }

    static let loadConstant: Reader = { b, l, p in
        guard l.output.count == 1 else { throw ImportError.malformed(b.loc(p), reason: "expected one output") }
        let y = try b.define(l.output[0], place: p)
        let dims: [Int], w: CoreML_Specification_WeightParams
        if case .loadConstantNd(let q)? = l.layer {
            dims = try q.shape.map { try dim($0, "shape", b, p) }
            w = q.data
        } else {
            let q = l.loadConstant
            guard q.shape.count == 3 else { throw ImportError.malformed(b.loc(p), reason: "loadConstant shape needs 3 values") }
            let chw = try q.shape.map { try dim($0, "shape", b, p) }
            dims = b.rank5 ? [1] + chw : [1, 1] + chw
            w = q.data
        }
        let c = b.constant("\(l.name)_value", try b.weight(w, shape: dims, place: "\(p) data"))
        b.node("Identity", l.name, [c], [y], rank: dims.count)
    }

    static let reshapeClassic: Reader = { b, l, p in
        let (x, y) = try one(&b, l, p)
        let q = l.reshape
        guard b.rank5 else { throw LayerReaderError("rank-5 reshape with exact array mapping") }
        guard q.targetShape.count == 3 else { throw LayerReaderError("target shape with a sequence axis") }
        let t = try q.targetShape.map { v -> Int in
            guard v > 0, v <= 1 << 31 else { throw ImportError.malformed(b.loc(p), reason: "targetShape \(q.targetShape)") }
            return Int(v)
        }
        if q.mode == .channelFirst {
            b.node("Reshape", l.name, [x, b.ints("\(l.name)_shape", [1] + t)], [y], rank: 4)
        } else {
            // Channel-last: read in (H, W, C) order, fill (H', W', C'), then back to (C', H', W').
            let a = b.temp("\(l.name)_hwc"), r2 = b.temp("\(l.name)_reshaped")
            b.node("Transpose", "\(l.name)_to_hwc", [x], [a], ["perm": ints([0, 2, 3, 1])], rank: 4)
            b.node("Reshape", "\(l.name)_reshape", [a, b.ints("\(l.name)_shape", [1, t[1], t[2], t[0]])], [r2], rank: 4)
            b.node("Transpose", l.name, [r2], [y], ["perm": ints([0, 3, 1, 2])], rank: 4)
        }
    }

    static let flattenClassic: Reader = { b, l, p in
        let (x, y) = try one(&b, l, p)
        let r = try rank(b, x)
        guard r >= 3 else { throw LayerReaderError("input of rank \(r)") }
        let shape = Array(repeating: 0, count: r - 3) + [-1, 1, 1]
        if l.flatten.mode == .channelFirst {
            b.node("Reshape", l.name, [x, b.ints("\(l.name)_shape", shape)], [y], rank: r)
        } else {
            let a = b.temp("\(l.name)_hwc")
            b.node("Transpose", "\(l.name)_to_hwc", [x], [a], ["perm": ints(Array(0..<(r - 3)) + [r - 2, r - 1, r - 3])], rank: r)
            b.node("Reshape", l.name, [a, b.ints("\(l.name)_shape", shape)], [y], rank: r)
        }
    }

    static let permute: Reader = { b, l, p in
        let (x, y) = try one(&b, l, p)
        let axis = l.permute.axis.map { Int(min($0, 9)) }
        guard axis.isEmpty || Set(axis) == Set(0..<4) && axis.count == 4 else {
            throw ImportError.malformed(b.loc(p), reason: "permute axes \(l.permute.axis)")
        }
        guard b.rank5 else { throw LayerReaderError("rank-5 permute with exact array mapping") }
        let a = axis.isEmpty ? [0, 1, 2, 3] : axis
        guard a[0] == 0 else { throw LayerReaderError("moves the sequence axis") }
        b.node("Transpose", l.name, [x], [y], ["perm": ints([0, a[1], a[2], a[3]])], rank: 4)
    }

    static let concat: Reader = { b, l, p in
        guard !l.input.isEmpty, l.output.count == 1 else { throw ImportError.malformed(b.loc(p), reason: "needs inputs and one output") }
        let xs = try l.input.map { try b.value($0, place: p) }
        let y = try b.define(l.output[0], place: p)
        let axis: Int
        if case .concatNd(let c)? = l.layer {
            if c.interleave { throw LayerReaderError("interleave") }
            axis = Int(c.axis)
        } else {
            if l.concat.sequenceConcat { throw LayerReaderError("sequence concat") }
            axis = -3
        }
        b.node("Concat", l.name, xs, [y], ["axis": .int(axis)], rank: b.ranks[xs[0]])
    }

    static let split: Reader = { b, l, p in
        guard l.input.count == 1, !l.output.isEmpty else { throw ImportError.malformed(b.loc(p), reason: "needs one input and outputs") }
        let x = try b.value(l.input[0], place: p)
        let ys = try l.output.map { try b.define($0, place: p) }
        if case .splitNd(let s)? = l.layer {
            var inputs = [x]
            if !s.splitSizes.isEmpty {
                guard s.splitSizes.count == ys.count else { throw ImportError.malformed(b.loc(p), reason: "\(s.splitSizes.count) sizes for \(ys.count) outputs") }
                inputs.append(b.ints("\(l.name)_sizes", try s.splitSizes.map { try dim($0, "splitSizes", b, p) }))
            }
            b.node("Split", l.name, inputs, ys, ["axis": .int(Int(s.axis)), "num_outputs": .int(ys.count)], rank: b.ranks[x])
        } else {
            b.node("Split", l.name, [x], ys, ["axis": .int(-3), "num_outputs": .int(ys.count)], rank: b.ranks[x])
        }
    }

    static let sliceClassic: Reader = { b, l, p in
        let (x, y) = try one(&b, l, p)
        let q = l.slice
        let axis: Int
        switch q.axis {
        case .channelAxis: axis = -3
        case .heightAxis: axis = -2
        case .widthAxis: axis = -1
        case .UNRECOGNIZED(let v): throw LayerReaderError("slice axis \(v)")
        }
        let stride = q.stride == 0 ? 1 : try dim(q.stride, "stride", b, p)
        let end = q.endIndex == 0 ? Int(Int32.max) : Int(q.endIndex)
        b.node("Slice", l.name, [x, b.ints("\(l.name)_starts", [Int(q.startIndex)]), b.ints("\(l.name)_ends", [end]),
                                 b.ints("\(l.name)_axes", [axis]), b.ints("\(l.name)_steps", [stride])], [y], rank: b.ranks[x])
    }

    static let sliceStatic: Reader = { b, l, p in
        let (x, y) = try one(&b, l, p)
        let q = l.sliceStatic
        let r = try rank(b, x)
        guard q.beginIds.count == r, q.endIds.count == r, q.strides.count == r, q.beginMasks.count == r, q.endMasks.count == r else {
            throw ImportError.malformed(b.loc(p), reason: "slice parameters do not have one entry per axis (rank \(r))")
        }
        let big = Int(Int32.max)
        var starts: [Int] = [], ends: [Int] = [], steps: [Int] = []
        for i in 0..<r {
            let s = Int(q.strides[i])
            guard s != 0 else { throw ImportError.malformed(b.loc(p), reason: "stride 0") }
            starts.append(q.beginMasks[i] ? (s > 0 ? 0 : big) : Int(max(min(q.beginIds[i], Int64(big)), -Int64(big))))
            ends.append(q.endMasks[i] ? (s > 0 ? big : -big) : Int(max(min(q.endIds[i], Int64(big)), -Int64(big))))
            steps.append(s)
        }
        guard q.squeezeMasks.isEmpty || q.squeezeMasks.count == r else {
            throw ImportError.malformed(b.loc(p), reason: "\(q.squeezeMasks.count) squeeze masks for rank \(r)")
        }
        let squeeze = q.squeezeMasks.enumerated().filter { $0.element }.map(\.offset)
        for a in squeeze {
            guard abs(starts[a]) < big else { throw ImportError.malformed(b.loc(p), reason: "begin index \(starts[a]) on a squeezed axis") }
            ends[a] = starts[a] == -1 ? big : starts[a] + 1; steps[a] = 1
        }
        let out = squeeze.isEmpty ? y : b.temp("\(l.name)_sliced")
        b.node("Slice", l.name, [x, b.ints("\(l.name)_starts", starts), b.ints("\(l.name)_ends", ends),
                                 b.ints("\(l.name)_axes", Array(0..<r)), b.ints("\(l.name)_steps", steps)], [out], rank: r)
        if !squeeze.isEmpty {
            b.node("Squeeze", "\(l.name)_squeeze", [out, b.ints("\(l.name)_squeeze_axes", squeeze)], [y], rank: max(r - squeeze.count, 1))
        }
    }
}
