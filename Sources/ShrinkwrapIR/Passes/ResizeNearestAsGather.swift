extension LoweringPass {
    /// Nearest-neighbour Resize by a factor that is not a whole number on some
    /// axis (a 16 → 31 map in a feature pyramid) as one Gather per resized axis
    /// with the source index of every output position, computed here with the
    /// ONNX formulas (coordinate transformation, then nearest_mode, clamped).
    /// Formats whose upsampling layers take whole factors only can then write
    /// it. Resizes by whole factors, and non-nearest ones, are left alone.
    public static let resizeNearestAsGather = LoweringPass(
        "resize-nearest-as-gather",
        "nearest Resize by a non-integer factor → a Gather of constant source indices per resized axis"
    ) { g in
        for k in g.nodes.indices.reversed() where g.nodes[k].opType == "Resize" {
            if let replacement = ResizeNearestGather.rewrite(&g, g.nodes[k]) { g.nodes.replaceSubrange(k...k, with: replacement) }
        }
    }
}

extension Node {
    /// Whether this nearest Resize, by whole factors s, reads input ⌊i / s⌋ —
    /// what Core ML's nearest upsampling does: asymmetric or
    /// tf_half_pixel_for_nn coordinates with floor rounding, or half-pixel
    /// coordinates with rounding (ties cannot occur for whole factors).
    public var nearestResizeFloorsQuotient: Bool {
        let ctm = string("coordinate_transformation_mode", "half_pixel"), nm = string("nearest_mode", "round_prefer_floor")
        return (["asymmetric", "tf_half_pixel_for_nn"].contains(ctm) && nm == "floor")
            || (["half_pixel", "pytorch_half_pixel"].contains(ctm) && nm.hasPrefix("round"))
    }
}

enum ResizeNearestGather {
    static let transforms: Set<String> = ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn"]

    static func rewrite(_ g: inout LoweringGraph, _ n: Node) -> [Node]? {
        let ctm = n.string("coordinate_transformation_mode", "half_pixel")
        guard n.string("mode", "nearest") == "nearest", transforms.contains(ctm), n.attributes["axes"] == nil,
              n.int("antialias", 0) == 0, n.string("keep_aspect_ratio_policy", "stretch") == "stretch",
              let x = n.input(0), let y = n.outputs.first, n.outputs.count == 1,
              let xs = g.shapes[x], let ys = g.shapes[y], xs.count == ys.count, xs.allSatisfy({ $0 > 0 }), ys.allSatisfy({ $0 > 0 }) else {
            return nil
        }
        guard zip(xs, ys).contains(where: { $0.0 != $0.1 && $0.1 % $0.0 != 0 }) else { return nil }
        var scales = zip(xs, ys).map { Double($0.1) / Double($0.0) }
        if let s = n.input(2), let e = g.constants[s], e.shape.reduce(1, *) == xs.count {
            scales = e.decoded().doubles
        }
        guard scales.allSatisfy({ $0.isFinite && $0 > 0 }) else { return nil }
        let mode = n.string("nearest_mode", "round_prefer_floor")
        var nodes: [Node] = []
        var current = x
        var shape = xs
        let axes = xs.indices.filter { xs[$0] != ys[$0] || sourceIndices(ctm, mode, inSize: xs[$0], outSize: ys[$0], scale: scales[$0]) != Array(0..<xs[$0]) }
        for (j, a) in axes.enumerated() {
            let idx = sourceIndices(ctm, mode, inSize: xs[a], outSize: ys[a], scale: scales[a])
            let c = g.addConstant(n.name + "_rows\(a)", .dense(Tensor(ints: idx.map { Int64($0) }, shape: [idx.count])))
            shape[a] = ys[a]
            let out = j == axes.count - 1 ? y : g.fresh(y + "_axis\(a)")
            if out != y { g.shapes[out] = shape; g.dtypes[out] = g.dtypes[x] }
            nodes.append(Node(name: j == 0 ? n.name : g.fresh(n.name + "_axis\(a)"), opType: "Gather", inputs: [current, c], outputs: [out],
                              attributes: ["axis": .int(a)]))
            current = out
        }
        return nodes.isEmpty ? nil : nodes
    }

    /// ONNX Resize (nearest): the source index of every output position along one axis.
    static func sourceIndices(_ ctm: String, _ mode: String, inSize: Int, outSize: Int, scale: Double) -> [Int] {
        let resized = scale * Double(inSize)
        return (0..<outSize).map { o in
            let y = Double(o)
            let x: Double
            switch ctm {
            case "align_corners": x = resized == 1 ? 0 : y * Double(inSize - 1) / (resized - 1)
            case "asymmetric": x = y / scale
            case "tf_half_pixel_for_nn": x = (y + 0.5) / scale
            case "pytorch_half_pixel": x = resized == 1 ? -0.5 : (y + 0.5) / scale - 0.5
            default: x = (y + 0.5) / scale - 0.5
            }
            let fl = x.rounded(.down), frac = x - fl
            var i = fl
            if frac != 0 {
                switch mode {
                case "round_prefer_ceil": i = frac < 0.5 ? fl : fl + 1
                case "floor": i = fl
                case "ceil": i = fl + 1
                default: i = frac <= 0.5 ? fl : fl + 1
                }
            }
            return Int(min(max(i, 0), Double(inSize - 1)))
        }
    }
}
