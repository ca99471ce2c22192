extension LoweringPass {
    /// Clip(x, lo, hi) with a bound computed at run time → Max(x, lo) then
    /// Min(·, hi) (ONNX's min(max(x, lo), hi)): for formats whose clip takes
    /// its bounds as constants. Infinite constant bounds are dropped; a Clip
    /// with only constant bounds is left alone.
    public static let clipRuntimeBoundsAsMinMax = LoweringPass(
        "clip-runtime-bounds-as-min-max", "Clip with a bound computed at run time → Max(x, lo), Min(·, hi)", lowers: ["Clip"]
    ) { g in
        var out: [Node] = []
        for n in g.nodes {
            let bounds = [n.input(1), n.input(2)]
            guard n.opType == "Clip", let x = n.input(0), let y = n.outputs.first, n.outputs.count == 1,
                  bounds.contains(where: { $0.map { !g.isConstant($0) } ?? false }) else {
                out.append(n)
                continue
            }
            /// A constant bound that clips nothing (±∞ on its side).
            func isOpen(_ v: String, _ infinity: Double) -> Bool {
                guard let c = g.constants[v]?.decoded().doubles else { return false }
                return !c.isEmpty && c.allSatisfy { $0 == infinity }
            }
            var steps: [(op: String, bound: String)] = []
            if let lo = bounds[0], !isOpen(lo, -.infinity) { steps.append(("Max", lo)) }
            if let hi = bounds[1], !isOpen(hi, .infinity) { steps.append(("Min", hi)) }
            var current = x
            for (i, step) in steps.enumerated() {
                let last = i == steps.count - 1
                let o = last ? y : g.fresh(y + "_clip_lo")
                if !last {
                    g.shapes[o] = g.shapes[y] ?? g.shapes[x]
                    g.dtypes[o] = g.dtypes[y] ?? g.dtypes[x]
                }
                out.append(Node(name: last ? n.name : g.fresh(n.name + "_lo"), opType: step.op, inputs: [current, step.bound], outputs: [o]))
                current = o
            }
            if steps.isEmpty { out.append(Node(name: n.name, opType: "Identity", inputs: [x], outputs: [y])) }
        }
        g.nodes = out
    }
}
