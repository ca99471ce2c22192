extension Graph {
    /// Every inference BatchNormalization that alone reads a Conv's output, folded into that Conv:
    /// W'[m] = W[m] · s[m], b'[m] = (b[m] − mean[m]) · s[m] + β[m] with s = γ / √(var + ε), in Double,
    /// rounded once to float32. The Conv then writes the BatchNormalization's output. Only float32
    /// constant weights read by that Conv alone, and constant parameters of the right length; the
    /// parameters left unread are dropped. Compression then sees the weights the layer really
    /// applies, and the BatchNormalization's 4 · C parameters become C biases (what converters such
    /// as coremltools do before compressing). Returns the graph and the number of folds.
    public func foldingBatchNormIntoConv() -> (graph: Graph, folded: Int) {
        var g = self
        var readers: [String: Int] = [:]
        for n in nodes { for name in n.inputs where !name.isEmpty { readers[name, default: 0] += 1 } }
        let outputsNamed = Set(outputs.map(\.name))
        var producer: [String: Int] = [:]
        for (k, n) in nodes.enumerated() { for o in n.outputs { producer[o] = k } }
        var removed = Set<Int>()
        var folded = 0
        func floats(_ name: String) -> [Double]? {
            guard let c = g.constant(named: name), case .dense(let t) = c.encoding, t.dtype == .float32, let f = t.floats else { return nil }
            return f.map(Double.init)
        }
        for (k, bn) in nodes.enumerated() where bn.opType == "BatchNormalization" {
            guard bn.inputs.count == 5, bn.outputs.count == 1, let x = bn.input(0), let ci = producer[x], !removed.contains(ci) else { continue }
            var conv = g.nodes[ci]
            guard conv.opType == "Conv", conv.outputs.count == 1, readers[x] == 1, !outputsNamed.contains(x),
                  let wName = conv.input(1), readers[wName] == 1,
                  let wc = g.constant(named: wName), case .dense(let wt) = wc.encoding, wt.dtype == .float32, let w = wt.floats,
                  wt.rank >= 3, let m = wt.shape.first, m > 0,
                  let gamma = floats(bn.inputs[1]), let beta = floats(bn.inputs[2]), let mean = floats(bn.inputs[3]), let variance = floats(bn.inputs[4]),
                  [gamma.count, beta.count, mean.count, variance.count].allSatisfy({ $0 == m }) else { continue }
            var bias = [Double](repeating: 0, count: m)
            let biasName = conv.input(2)
            if let b = biasName {
                guard readers[b] == 1, let v = floats(b), v.count == m else { continue }
                bias = v
            }
            var eps = 1e-5
            if case .float(let e)? = bn.attributes["epsilon"] { eps = Double(e) }
            if case .int(let t)? = bn.attributes["training_mode"], t != 0 { continue }
            let scale = (0..<m).map { gamma[$0] / (variance[$0] + eps).squareRoot() }
            guard scale.allSatisfy(\.isFinite) else { continue }
            let per = w.count / m
            var nw = [Float](repeating: 0, count: w.count)
            for o in 0..<m { for i in 0..<per { nw[o * per + i] = Float(Double(w[o * per + i]) * scale[o]) } }
            let nb = (0..<m).map { Float((bias[$0] - mean[$0]) * scale[$0] + beta[$0]) }
            guard nw.allSatisfy(\.isFinite), nb.allSatisfy(\.isFinite) else { continue }
            g.setConstant(Constant(name: wName, tensor: Tensor(nw, shape: wt.shape)))
            let newBias: String
            if let b = biasName { newBias = b } else {
                var name = bn.outputs[0] + "_folded_bias", n = 1
                while g.constant(named: name) != nil || producer[name] != nil || g.inputs.contains(where: { $0.name == name }) { n += 1; name = bn.outputs[0] + "_folded_bias\(n)" }
                newBias = name
            }
            g.setConstant(Constant(name: newBias, tensor: Tensor(nb, shape: [m])))
            conv.inputs = [conv.inputs[0], wName, newBias]
            conv.outputs = bn.outputs
            g.nodes[ci] = conv
            removed.insert(k)
            folded += 1
        }
        guard folded > 0 else { return (self, 0) }
        g.nodes = g.nodes.enumerated().filter { !removed.contains($0.offset) }.map(\.element)
        var read = Set<String>()
        for n in g.nodes { read.formUnion(n.inputs) }
        for n in g.nodes { for (_, sub) in n.subgraphs { read.formUnion(sub.nodes.flatMap(\.inputs)) } }
        read.formUnion(g.outputs.map(\.name))
        for c in g.constants where !read.contains(c.name) { g.removeConstant(named: c.name) }
        return (g, folded)
    }
}
