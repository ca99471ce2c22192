import ShrinkwrapIR

extension CompressWeights {
    /// Bias correction: for each compressed weight of a Conv or Gemm with calibration statistics, the
    /// output's expected shift Δ[m] = Σₖ (W − Ŵ)[m, k] · E[xₖ] (Conv: over its patch columns, padding
    /// included) added to the node's float32 bias, or given to it as a new bias. The weight's log entry
    /// says what was done, or why not (a bias shared with other nodes or already compressed, MatMul).
    static func correctBiases(_ graph: inout Graph, _ entries: inout [CompressionLogEntry], tasks: [Task],
                              uses: [String: [(node: Node, input: Int)]]) {
        for task in tasks {
            let w = task.input
            var e = entries[task.index]
            guard e.compressed, let stats = w.statistics, stats.misfit(w) == nil, stats.rowShare == nil,
                  let m = WeightMatrix(shape: w.shape, outputAxis: w.outputAxis),
                  let decoded = graph.constant(named: w.name)?.encoding.decoded().floats, decoded.count == w.values.count else { continue }
            func note(_ s: String) { e.notes.append("bias correction: " + s); entries[task.index] = e }
            guard let use = uses[w.name], use.count == 1, let user = use.first, user.input == 1,
                  user.node.opType == "Conv" || user.node.opType == "Gemm" else {
                note("not applied (only a weight read by one Conv or Gemm has a bias to take the shift)")
                continue
            }
            let perGroup = m.rows / stats.groups
            var shift = [Double](repeating: 0, count: m.rows)
            for r in 0..<m.rows {
                let g = r / perGroup
                var s = 0.0
                for k in 0..<m.columns {
                    let i = m.index(r, k)
                    s += Double(w.values[i] - decoded[i]) * stats.mean[g * m.columns + k]
                }
                shift[r] = s
            }
            guard let k = graph.nodes.firstIndex(where: { $0.name == user.node.name && $0.inputs == user.node.inputs && $0.outputs == user.node.outputs }) else { continue }
            var node = graph.nodes[k]
            let largest = shift.map(abs).max() ?? 0
            if let b = node.input(2) {
                let readers = graph.nodes.filter { $0.inputs.contains(b) }.count
                guard readers == 1, let c = graph.constant(named: b), case .dense(let t) = c.encoding, t.dtype == .float32,
                      let bias = t.floats, bias.count == m.rows else {
                    note("not applied (the bias '\(b)' is shared, compressed or not \(m.rows) float32 values)")
                    continue
                }
                let corrected = zip(bias, shift).map { Float(Double($0) + $1) }
                guard corrected.allSatisfy(\.isFinite) else { note("not applied (the corrected bias would not be finite)"); continue }
                graph.setConstant(Constant(name: b, tensor: Tensor(corrected, shape: t.shape)))
                note("expected output shift (largest |Δ| \(shortNumber(largest))) added to the bias '\(b)'")
            } else {
                var name = w.name + "_bias_correction", n = 1
                while graph.constant(named: name) != nil || graph.nodes.contains(where: { $0.outputs.contains(name) }) { n += 1; name = w.name + "_bias_correction\(n)" }
                let bias = Constant(name: name, tensor: Tensor(shift.map { Float($0) }, shape: [m.rows]))
                graph.setConstant(bias)
                while node.inputs.count < 2 { node.inputs.append("") }
                node.inputs = Array(node.inputs.prefix(2)) + [name]
                graph.nodes[k] = node
                // Logged like any bias, so that later steps (an fp16 layer's companions) see it.
                var added = logEntry(bias, users: [(node, 2)])
                added.skipped = "bias of \(node.opType) '\(node.label)' (made by bias correction)"
                entries.append(added)
                note("expected output shift (largest |Δ| \(shortNumber(largest))) given to the node as a new bias '\(name)'")
            }
        }
    }

    static func shortNumber(_ x: Double) -> String {
        var s = "\(Float(x))"
        if s.count > 10, let e = s.firstIndex(of: "e") { s = String(s[..<s.index(s.startIndex, offsetBy: 6)]) + String(s[e...]) }
        return s
    }
}
