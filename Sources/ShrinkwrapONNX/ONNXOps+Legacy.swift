import ShrinkwrapIR

/// Rewrites of ONNX forms that changed across opsets into the newest form.
extension ONNXOps {
    /// Constant → a graph constant (no node).
    static func constant(_ b: inout GraphBuilder, _ n: Node, _ place: String) throws {
        guard let out = n.outputs.first, !out.isEmpty else {
            throw ImportError.malformed(b.location(place), reason: "Constant has no output")
        }
        let t: Tensor
        switch (n.attributes["value"], n.attributes["value_float"], n.attributes["value_floats"],
                n.attributes["value_int"], n.attributes["value_ints"]) {
        case (.tensor(let v)?, _, _, _, _): t = v
        case (_, .float(let v)?, _, _, _): t = .scalar(v)
        case (_, _, .floats(let v)?, _, _): t = Tensor(v, shape: [v.count])
        case (_, _, _, .int(let v)?, _): t = .scalar(int: Int64(v))
        case (_, _, _, _, .ints(let v)?): t = Tensor(ints: v.map(Int64.init), shape: [v.count])
        default:
            throw ImportError.unsupported(b.location(place), what: "Constant without a tensor, float or int value (string and sparse constants)")
        }
        b.graph.setConstant(Constant(name: out, tensor: t))
    }

    /// Clip before opset 11 had min/max attributes; now they are inputs 1 and 2.
    static func clip(_ b: inout GraphBuilder, _ n: Node, _ place: String) throws {
        var n = n
        if b.opset < 11 {
            var ins = [n.inputs.first ?? ""]
            for key in ["min", "max"] {
                if case .float(let v)? = n.attributes[key] {
                    ins.append(b.addConstant(.scalar(v), hint: "\(n.label)_\(key)"))
                } else {
                    ins.append("")
                }
                n.attributes[key] = nil
            }
            while ins.last == "" && ins.count > 1 { ins.removeLast() }
            n.inputs = ins
        }
        b.emit(n)
    }

    /// Split: `split` attribute → input 1 (opset 13); `num_outputs` is always
    /// set so the kernel knows how many pieces to make.
    static func split(_ b: inout GraphBuilder, _ n: Node, _ place: String) throws {
        var n = n
        if case .ints(let sizes)? = n.attributes["split"] {
            let name = b.addConstant(Tensor(ints: sizes.map(Int64.init), shape: [sizes.count]), hint: "\(n.label)_split")
            n.inputs = [n.inputs.first ?? "", name]
            n.attributes["split"] = nil
        }
        if n.attributes["num_outputs"] == nil { n.attributes["num_outputs"] = .int(n.outputs.count) }
        b.emit(n)
    }

    /// `axes` attribute → optional input 1 (Squeeze, Unsqueeze, Reduce*).
    static func axesToInput(sinceOpset: Int) -> ONNXTranslator {
        return { b, n, _ in
            var n = n
            if b.opset < sinceOpset || n.attributes["axes"] != nil {
                if case .ints(let axes)? = n.attributes["axes"] {
                    let name = b.addConstant(Tensor(ints: axes.map(Int64.init), shape: [axes.count]), hint: "\(n.label)_axes")
                    n.inputs = [n.inputs.first ?? "", name]
                }
                n.attributes["axes"] = nil
            }
            b.emit(n)
        }
    }

    /// Pad before opset 11: `pads` (or `paddings`) and `value` attributes → inputs.
    static func pad(_ b: inout GraphBuilder, _ n: Node, _ place: String) throws {
        var n = n
        if b.opset < 11 {
            let pads: [Int]
            switch n.attributes["pads"] ?? n.attributes["paddings"] {
            case .ints(let p)?: pads = p
            default: throw ImportError.malformed(b.location(place), reason: "Pad needs a 'pads' attribute before opset 11")
            }
            var value: Float = 0
            if case .float(let v)? = n.attributes["value"] { value = v }
            let padsName = b.addConstant(Tensor(ints: pads.map(Int64.init), shape: [pads.count]), hint: "\(n.label)_pads")
            let valueName = b.addConstant(.scalar(value), hint: "\(n.label)_value")
            n.inputs = [n.inputs.first ?? "", padsName, valueName]
            n.attributes = n.attributes.filter { $0.key == "mode" }
        }
        b.emit(n)
    }

    /// Slice before opset 10: starts / ends / axes attributes → inputs.
    static func slice(_ b: inout GraphBuilder, _ n: Node, _ place: String) throws {
        var n = n
        if b.opset < 10 {
            guard case .ints(let starts)? = n.attributes["starts"], case .ints(let ends)? = n.attributes["ends"] else {
                throw ImportError.malformed(b.location(place), reason: "Slice needs 'starts' and 'ends' before opset 10")
            }
            var ins = [n.inputs.first ?? ""]
            ins.append(b.addConstant(Tensor(ints: starts.map(Int64.init), shape: [starts.count]), hint: "\(n.label)_starts"))
            ins.append(b.addConstant(Tensor(ints: ends.map(Int64.init), shape: [ends.count]), hint: "\(n.label)_ends"))
            if case .ints(let axes)? = n.attributes["axes"] {
                ins.append(b.addConstant(Tensor(ints: axes.map(Int64.init), shape: [axes.count]), hint: "\(n.label)_axes"))
            }
            n.inputs = ins
            n.attributes = [:]
        }
        b.emit(n)
    }

    /// Resize opset 10 had (X, scales) and Upsample's coordinate rule.
    static func resize(_ b: inout GraphBuilder, _ n: Node, _ place: String) throws {
        var n = n
        if b.opset < 11 {
            n.inputs = [n.inputs.first ?? "", "", n.inputs.count > 1 ? n.inputs[1] : ""]
            n.attributes["coordinate_transformation_mode"] = .string("asymmetric")
            n.attributes["nearest_mode"] = .string("floor")
        }
        b.emit(n)
    }

    /// Upsample (opsets 7–9) → Resize with asymmetric coordinates and floor rounding.
    static func upsample(_ b: inout GraphBuilder, _ n: Node, _ place: String) throws {
        var r = Node(name: n.name, opType: "Resize", inputs: [], outputs: n.outputs)
        var mode = "nearest"
        if case .string(let m)? = n.attributes["mode"] { mode = m == "bilinear" ? "linear" : m }
        r.attributes["mode"] = .string(mode)
        r.attributes["coordinate_transformation_mode"] = .string("asymmetric")
        r.attributes["nearest_mode"] = .string("floor")
        let x = n.inputs.first ?? ""
        if case .floats(let s)? = n.attributes["scales"] {
            r.inputs = [x, "", b.addConstant(Tensor(s, shape: [s.count]), hint: "\(n.label)_scales")]
        } else if n.inputs.count > 1 {
            r.inputs = [x, "", n.inputs[1]]
        } else {
            throw ImportError.malformed(b.location(place), reason: "Upsample needs scales")
        }
        b.emit(r)
    }

    /// Softmax / LogSoftmax / Hardmax before opset 13 flatten the input to 2-D
    /// at `axis` (default 1). Rewritten as Shape → Flatten → op(axis −1) →
    /// Reshape unless the axis is already the last one.
    static func softmaxFamily(_ b: inout GraphBuilder, _ n: Node, _ place: String) throws {
        guard b.opset < 13 else { b.emit(n); return }
        var axis = 1
        if case .int(let a)? = n.attributes["axis"] { axis = a }
        let x = n.inputs.first ?? ""
        let rank = b.graph.valueInfo[x]?.shape?.count ?? b.graph.constant(named: x)?.encoding.shape.count
        if axis == -1 || (rank != nil && (axis == (rank ?? 0) - 1)) {
            var m = n
            m.attributes["axis"] = .int(-1)
            b.emit(m)
            return
        }
        guard let y = n.outputs.first else { return }
        let shape = b.freshName("\(x)_shape")
        let flat = b.freshName("\(x)_2d")
        let soft = b.freshName("\(y)_2d")
        b.emit(Node(name: "\(n.label)_shape", opType: "Shape", inputs: [x], outputs: [shape]))
        b.emit(Node(name: "\(n.label)_flatten", opType: "Flatten", inputs: [x], outputs: [flat], attributes: ["axis": .int(axis)]))
        b.emit(Node(name: n.name, opType: n.opType, inputs: [flat], outputs: [soft], attributes: ["axis": .int(-1)]))
        b.emit(Node(name: "\(n.label)_reshape", opType: "Reshape", inputs: [soft, shape], outputs: [y]))
    }

    /// BatchNormalization: inference form; training-only attributes dropped.
    static func batchNorm(_ b: inout GraphBuilder, _ n: Node, _ place: String) throws {
        var n = n
        if case .int(let s)? = n.attributes["spatial"], s == 0 {
            throw ImportError.unsupported(b.location(place), what: "BatchNormalization with spatial=0")
        }
        // Opset 14+: training_mode selects batch statistics and the running-stat
        // outputs; earlier opsets' extra outputs are training-only and dropped.
        let training: Bool
        if case .int(let t)? = n.attributes["training_mode"] { training = t != 0 } else { training = false }
        n.attributes = n.attributes.filter { $0.key == "epsilon" || $0.key == "momentum" || $0.key == "training_mode" }
        if !(training && b.opset >= 14) { n.outputs = Array(n.outputs.prefix(1)) }
        b.emit(n)
    }

    /// Dropout: inference (identity); `ratio` moved to an input in opset 12.
    static func dropout(_ b: inout GraphBuilder, _ n: Node, _ place: String) throws {
        var n = n
        n.attributes = n.attributes.filter { $0.key == "seed" }
        if b.opset < 12 { n.inputs = Array(n.inputs.prefix(1)) }
        b.emit(n)
    }

    /// An op that was renamed without changing its meaning.
    static func renamed(_ newName: String) -> ONNXTranslator {
        return { b, n, _ in
            var n = n
            n.opType = newName
            b.emit(n)
        }
    }

    /// TopK: `k` attribute → input 1 (opset 10).
    static func topK(_ b: inout GraphBuilder, _ n: Node, _ place: String) throws {
        var n = n
        if case .int(let k)? = n.attributes["k"] {
            n.inputs = [n.inputs.first ?? "", b.addConstant(Tensor(ints: [Int64(k)], shape: [1]), hint: "\(n.label)_k")]
            n.attributes["k"] = nil
        }
        b.emit(n)
    }
}

extension ONNXOps {
    /// Binary ops before opset 7 broadcast only with `broadcast=1`, aligning
    /// B's dimensions at A's `axis` (default: trailing, as numpy does). When
    /// `axis` leaves trailing dimensions, B gets trailing 1s (an Unsqueeze)
    /// so numpy broadcasting means the same thing.
    static func legacyBroadcast(_ b: inout GraphBuilder, _ n: Node, _ place: String) throws {
        var n = n
        guard b.opset < 7 else { b.emit(n); return }
        defer { b.emit(n) }
        let axisAttr = n.attributes["axis"]
        n.attributes["broadcast"] = nil
        n.attributes["axis"] = nil
        n.attributes["consumed_inputs"] = nil
        guard case .int(let axis)? = axisAttr, n.inputs.count == 2 else { return }
        func rank(_ v: String) -> Int? {
            b.graph.valueInfo[v]?.shape?.count ?? b.graph.constant(named: v)?.encoding.shape.count
        }
        guard let ra = rank(n.inputs[0]), let rb = rank(n.inputs[1]) else {
            throw ImportError.unsupported(b.location(place),
                                          what: "legacy broadcast with axis=\(axis) where the operand ranks are unknown")
        }
        let a = axis < 0 ? axis + ra : axis
        let trailing = ra - a - rb
        guard a >= 0, trailing >= 0 else {
            throw ImportError.malformed(b.location(place), reason: "broadcast axis \(axis) does not fit ranks \(ra) and \(rb)")
        }
        if trailing == 0 { return }
        let axes = b.addConstant(Tensor(ints: (rb..<(rb + trailing)).map(Int64.init), shape: [trailing]), hint: "\(n.label)_axes")
        let expanded = b.freshName("\(n.inputs[1])_aligned")
        b.emit(Node(name: "\(n.label)_align", opType: "Unsqueeze", inputs: [n.inputs[1], axes], outputs: [expanded]))
        n.inputs[1] = expanded
    }
}

extension ONNXOps {
    /// PRelu before opset 7 applied a 1-D slope per channel (axis 1); since
    /// opset 7 the slope broadcasts numpy-style from the right. A 1-D slope of
    /// more than one element gets trailing 1s so it still lines up with axis 1.
    static func preluLegacy(_ b: inout GraphBuilder, _ n: Node, _ place: String) throws {
        var n = n
        guard b.opset < 7, n.inputs.count == 2 else { b.emit(n); return }
        n.attributes["consumed_inputs"] = nil
        let slopeShape = b.graph.valueInfo[n.inputs[1]]?.staticShape ?? b.graph.constant(named: n.inputs[1])?.encoding.shape
        guard let slopeShape, slopeShape.count == 1, slopeShape[0] > 1 else { b.emit(n); return }
        guard let rank = b.graph.valueInfo[n.inputs[0]]?.shape?.count else {
            throw ImportError.unsupported(b.location(place), what: "opset-\(b.opset) PRelu with a per-channel slope on an input of unknown rank")
        }
        if rank > 2 {
            let axes = b.addConstant(Tensor(ints: (1..<(rank - 1)).map(Int64.init), shape: [rank - 2]), hint: "\(n.label)_axes")
            let aligned = b.freshName("\(n.inputs[1])_aligned")
            b.emit(Node(name: "\(n.label)_align", opType: "Unsqueeze", inputs: [n.inputs[1], axes], outputs: [aligned]))
            n.inputs[1] = aligned
        }
        b.emit(n)
    }
}
