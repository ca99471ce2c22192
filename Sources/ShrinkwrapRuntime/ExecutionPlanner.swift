import ShrinkwrapIR

/// Load-time rewrites the interpreter applies to its private copy of a graph
/// before executing it. They change how values are computed, never what a
/// graph output means; the graph a caller holds is untouched.
///
/// 1. Constant folding: a node whose inputs are all constants runs once at
///    load (e.g. the ConstantOfShape weights of the ONNX light models).
/// 2. BatchNormalization after a Conv whose output nothing else reads runs
///    inside the Conv, on each output block while it is in cache, with the
///    BatchNormalization kernel's own arithmetic (`ConvEpilogue`): for
///    float32 values, the same bits as the two nodes. (Folding it into the weights rounds each weight
///    once more, an error every position of a channel shares.)
/// 3. Convs whose filters (with their bias) repeat compute each distinct
///    filter once and copy channels with a Gather: identical filters then give
///    bit-identical channels whatever the GEMM backend's register blocking.
///
/// 4a. An Add of a Conv's output and another value (a residual connection)
///    runs inside the Conv (`fuseResidualAdds`); a constant that varies by channel at most
///    (paddle2onnx's Conv biases) becomes the Conv's epilogue shift first (`fuseChannelAdds`).
///
/// 4. An activation (Relu, Clip, LeakyRelu, PRelu, HardSwish, HardSigmoid,
///    Sigmoid, Tanh: `FusedActivation`) that is the only reader of a Conv's output runs
///    inside the Conv, on each output block while it is still in cache.
///
/// 4b. SiLU spelled out (Sigmoid(c), Mul(c, ·)) runs inside the Conv c too (`fuseConvSiLUs`), and so
///    does HardSwish spelled out (Add 3, Clip 0…6, Mul, Div 6: `fuseConvHardSwishOps`).
///
/// 5. Loop-invariant values and nodes leave Loop bodies (`hoistLoopInvariants`).
///
/// 7. Runs of float elementwise nodes run as one `ElementwiseChain` node, block
///    by block in cache (`fuseElementwiseChains`).
///
/// 8. Stride-1 Convs with 3, 5 or 7 taps along one axis, or 3 × 3, get their filters in the
///    Winograd domain once (`useWinogradFilters`); values change by float32 rounding only.
///
/// 9. A one-hot encoding times a constant matrix (Equal with 0 ..< K, Cast, MatMul) runs as a row
///    lookup (`fuseOneHotMatMuls`), with the MatMul's bits.
///
/// Fusions (2), (4) and (7) keep every float32 value's bits ((7) float16's too); (3) may round a
/// channel differently (a smaller GEMM blocks differently). `Options.optimize
/// = false` keeps the graph exactly as imported (the per-layer report uses it
/// so that every intermediate value exists).
struct ExecutionPlanner {
    var graph: Graph
    let threads: Int
    /// Names of the values the optimizations make: `hint__planN`.
    var names = NameAllocator(.numbered(separator: "__plan"))

    /// Outputs of folded nodes larger than this stay computed at run time.
    static let foldLimit = 1 << 26

    mutating func run(optimize: Bool) throws {
        try foldConstants()
        guard optimize else { return }
        try hoistLoopInvariants()
        try sinkTransposes()
        names = NameAllocator(.numbered(separator: "__plan"), reserving: graph)
        fusePadIntoConv()
        fuseBatchNormIntoConv()
        fuseChannelAdds()
        shareDuplicateFilters()
        fuseResidualAdds()
        fuseConvSiLUs()
        // A spelled-out HardSwish may follow the Conv directly or after scalar arithmetic fused first
        // (PP-OCR v4's scale and bias); what follows it fuses in the second round.
        fuseConvHardSwishOps()
        fuseConvActivations()
        fuseConvHardSwishOps()
        fuseConvActivations()
        useDirectFilters()
        useWinogradFilters()
        transposeRecurrentWeights()
        fuseOneHotMatMuls()
        fuseElementwiseChains()
    }

    // MARK: 1. constant folding

    mutating func foldConstants() throws {
        let graphOutputs = Set(graph.outputs.map(\.name))
        var kept: [Node] = []
        var folded: [String: Tensor] = [:]
        func value(_ name: String) -> Tensor? {
            if let t = folded[name] { return t }
            return graph.constant(named: name)?.encoding.decoded()
        }
        for n in graph.nodes {
            let inputs = n.inputs.filter { !$0.isEmpty }
            // A node with subgraphs (If, Loop) runs at run time: its branches read captured values.
            let allConstant = !inputs.isEmpty && !n.hasSubgraphs && inputs.allSatisfy { folded[$0] != nil || graph.isConstant($0) }
            guard allConstant, let kernel = KernelRegistry.kernels[n.opType],
                  !n.outputs.contains(where: { graphOutputs.contains($0) }) else {
                kept.append(n)
                continue
            }
            let args = n.inputs.map { $0.isEmpty ? nil : value($0) }
            guard let outs = try? kernel(KernelContext(node: n, inputs: args, threads: threads)),
                  outs.count >= n.outputs.count, outs.allSatisfy({ $0.count <= Self.foldLimit }) else {
                kept.append(n)  // the kernel's error surfaces at run time, with its context
                continue
            }
            for (o, t) in zip(n.outputs, outs) where !o.isEmpty { folded[o] = t }
        }
        if folded.isEmpty { return }
        // Only values still read by a remaining node become constants.
        let read = Set(kept.flatMap(\.readNames))
        for n in graph.nodes {
            for o in n.outputs where !o.isEmpty && read.contains(o) {
                if let t = folded[o] { graph.setConstant(Constant(name: o, tensor: t)) }
            }
        }
        graph.nodes = kept
    }

    // MARK: 5. loop invariants

    /// Loops run only what changes from one iteration to the next: paddle2onnx's copies become
    /// Identity (`replacingZeroAssignments`, the one step that may change a bit: −0 stays −0),
    /// carried values the body hands back unchanged become captures, and body nodes that read only captures and
    /// constants run once, in front of the Loop (folded there when they read only constants).
    /// Other values keep their bits.
    mutating func hoistLoopInvariants() throws {
        guard graph.nodes.contains(where: { $0.opType == "Loop" }) else { return }
        graph = graph.replacingZeroAssignments().graph
        for k in graph.nodes.indices where graph.nodes[k].opType == "Loop" {
            guard case .graph(let body)? = graph.nodes[k].attributes["body"] else { continue }
            graph.nodes[k].attributes["body"] = .graph(body.replacingZeroAssignments().graph)
        }
        let hoisted = graph.hoistingLoopInvariants().graph.hoistingLoopInvariantNodes()
        graph = hoisted.graph
        if hoisted.hoisted > 0 { try foldConstants() }  // what the bodies computed from their constants alone
    }

    // MARK: 6. layout

    /// Transposes moved down through element-wise ops, broadcasting arithmetic, Concat and
    /// Pad, and inverse pairs removed (`sinkTransposesForExecution`): a graph imported from
    /// TFLite then runs its NHWC regions in NCHW, without the NHWC↔NCHW pairs its importer
    /// wraps around every layout-specific op. Moves values, never changes them.
    mutating func sinkTransposes() throws {
        guard graph.nodes.contains(where: { $0.opType == "Transpose" }) else { return }
        graph = try LoweringPipeline([.sinkTransposesForExecution]).applied(to: graph)
    }

    // MARK: helpers

    /// How many nodes read each value (graph outputs count as readers).
    func readers() -> [String: Int] {
        var r: [String: Int] = [:]
        for n in graph.nodes { for i in n.readNames { r[i, default: 0] += 1 } }
        for o in graph.outputs { r[o.name, default: 0] += 1 }
        return r
    }

    func floatConstant(_ name: String) -> Tensor? {
        guard let c = graph.constant(named: name) else { return nil }
        let t = c.encoding.decoded()
        return t.dtype == .float32 ? t : nil
    }

    mutating func freshName(_ hint: String) -> String { names.fresh(hint) }

    // MARK: 2. Conv + BatchNormalization

    mutating func fuseBatchNormIntoConv() {
        let r = readers()
        var producer: [String: Int] = [:]
        for (i, n) in graph.nodes.enumerated() { for o in n.outputs { producer[o] = i } }
        var remove = Set<Int>()
        for (bi, bn) in graph.nodes.enumerated() where bn.opType == "BatchNormalization" && bn.outputs.count == 1 {
            if case .int(let t)? = bn.attributes["training_mode"], t != 0 { continue }
            guard bn.inputs.count == 5, let ci = producer[bn.inputs[0]], !remove.contains(ci) else { continue }
            let conv = graph.nodes[ci]
            guard conv.opType == "Conv", conv.outputs.count == 1, r[conv.outputs[0]] == 1,
                  conv.inputs.count >= 2, let w = floatConstant(conv.inputs[1]),
                  let s = floatConstant(bn.inputs[1])?.floats, let beta = floatConstant(bn.inputs[2])?.floats,
                  let mean = floatConstant(bn.inputs[3])?.floats, let variance = floatConstant(bn.inputs[4])?.floats
            else { continue }
            let m = w.shape.first ?? 0
            guard m > 0, [s.count, beta.count, mean.count, variance.count].allSatisfy({ $0 == m }) else { continue }
            if let b = conv.input(2), floatConstant(b)?.floats?.count != m { continue }
            guard conv.attributes[NNKernels.fusedScaleAttribute] == nil, conv.attributes[FusedActivation.nameAttribute] == nil
            else { continue }
            var eps: Float = 1e-5
            if case .float(let e)? = bn.attributes["epsilon"] { eps = e }
            let (a, b) = NNKernels.batchNormAffine(scale: s, bias: beta, mean: mean, variance: variance, epsilon: eps)
            var fused = conv
            fused.attributes[NNKernels.fusedScaleAttribute] = .floats(a)
            fused.attributes[NNKernels.fusedShiftAttribute] = .floats(b)
            fused.outputs = bn.outputs
            graph.nodes[ci] = fused
            remove.insert(bi)
        }
        if !remove.isEmpty {
            graph.nodes = graph.nodes.enumerated().filter { !remove.contains($0.offset) }.map(\.element)
        }
    }

    // MARK: 3. duplicate filters

    mutating func shareDuplicateFilters() {
        var out: [Node] = []
        for n in graph.nodes {
            guard n.opType == "Conv", n.outputs.count == 1, n.inputs.count >= 2,
                  let w = floatConstant(n.inputs[1]), let wf = w.floats, w.rank >= 3 else { out.append(n); continue }
            if case .int(let g)? = n.attributes["group"], g != 1 { out.append(n); continue }
            let m = w.shape[0]
            guard m >= 2 else { out.append(n); continue }
            let per = wf.count / m
            var bias: [Float]?
            if let b = n.input(2) {
                guard let bf = floatConstant(b)?.floats, bf.count == m else { out.append(n); continue }
                bias = bf
            }
            // A fused BatchNormalization's per-channel scale and shift belong to the filter too.
            var affine: [[Float]] = []
            for key in [NNKernels.fusedScaleAttribute, NNKernels.fusedShiftAttribute] {
                if case .floats(let v)? = n.attributes[key], v.count == m { affine.append(v) }
            }
            // Group filters by exact bit pattern (weights, bias, fused scale and shift): a cheap
            // FNV-1a hash per filter, then an exact comparison within a bucket.
            func same(_ a: Int, _ b: Int) -> Bool {
                if let bias, bias[a].bitPattern != bias[b].bitPattern { return false }
                for v in affine where v[a].bitPattern != v[b].bitPattern { return false }
                for j in 0..<per where wf[a * per + j].bitPattern != wf[b * per + j].bitPattern { return false }
                return true
            }
            var buckets: [UInt64: [Int]] = [:]  // hash → indices into `uniques`
            var uniqueIndex = [Int](repeating: 0, count: m)
            var uniques: [Int] = []
            wf.withUnsafeBufferPointer { wp in
                for o in 0..<m {
                    var h: UInt64 = 0xcbf2_9ce4_8422_2325
                    for j in 0..<per { h = (h ^ UInt64(wp[o * per + j].bitPattern)) &* 0x100_0000_01b3 }
                    if let bias { h = (h ^ UInt64(bias[o].bitPattern)) &* 0x100_0000_01b3 }
                    for v in affine { h = (h ^ UInt64(v[o].bitPattern)) &* 0x100_0000_01b3 }
                    if let u = buckets[h]?.first(where: { same(uniques[$0], o) }) {
                        uniqueIndex[o] = u
                    } else {
                        buckets[h, default: []].append(uniques.count)
                        uniqueIndex[o] = uniques.count
                        uniques.append(o)
                    }
                }
            }
            guard uniques.count < m else { out.append(n); continue }
            var nw: [Float] = []
            nw.reserveCapacity(uniques.count * per)
            for o in uniques { nw.append(contentsOf: wf[(o * per)..<((o + 1) * per)]) }
            let wName = freshName("\(n.inputs[1])_distinct")
            graph.setConstant(Constant(name: wName, tensor: Tensor(nw, shape: [uniques.count] + Array(w.shape.dropFirst()))))
            var conv = n
            conv.inputs[1] = wName
            if let bias {
                let bName = freshName("\(n.label)_distinct_bias")
                graph.setConstant(Constant(name: bName, tensor: Tensor(uniques.map { bias[$0] }, shape: [uniques.count])))
                conv.inputs[2] = bName
            }
            for (key, v) in zip([NNKernels.fusedScaleAttribute, NNKernels.fusedShiftAttribute], affine) {
                conv.attributes[key] = .floats(uniques.map { v[$0] })
            }
            let distinct = freshName("\(n.outputs[0])_distinct")
            conv.outputs = [distinct]
            let idx = freshName("\(n.label)_channel_map")
            graph.setConstant(Constant(name: idx, tensor: Tensor(ints: uniqueIndex.map(Int64.init), shape: [m])))
            out.append(conv)
            out.append(Node(name: "\(n.label)_expand_channels", opType: "Gather", inputs: [distinct, idx],
                            outputs: n.outputs, attributes: ["axis": .int(1)]))
        }
        graph.nodes = out
    }

    // MARK: 4. Conv + activation

    /// An activation `FusedActivation` knows (Relu, Clip, LeakyRelu, PRelu, HardSwish, HardSigmoid,
    /// Sigmoid, Tanh) that is the only reader of a Conv's output runs in the Conv's epilogue.
    mutating func fuseConvActivations() {
        let r = readers()
        var producer: [String: Int] = [:]
        for (i, n) in graph.nodes.enumerated() { for o in n.outputs { producer[o] = i } }
        var remove = Set<Int>()
        let constants = graph
        for (ai, node) in graph.nodes.enumerated() {
            // The Conv value this node reads (Max / Min may take it second); later activations of
            // the same Conv append to its list.
            guard let x = node.inputs.first(where: { producer[$0].map { graph.nodes[$0].opType == "Conv" } ?? false }),
                  let ci = producer[x], graph.nodes[ci].outputs == [x], r[x] == 1,
                  var list = FusedActivation.fused(in: graph.nodes[ci]),
                  let w = graph.nodes[ci].input(1), let rank = graph.constant(named: w)?.encoding.shape.count,
                  let activation = FusedActivation(node: node, value: x, rank: rank,
                                                   constant: { constants.constant(named: $0)?.encoding.decoded() })
            else { continue }
            list.append(activation)
            graph.nodes[ci].attributes.merge(FusedActivation.attributes(list)) { $1 }
            graph.nodes[ci].outputs = node.outputs
            producer[node.outputs[0]] = ci
            remove.insert(ai)
        }
        if !remove.isEmpty {
            graph.nodes = graph.nodes.enumerated().filter { !remove.contains($0.offset) }.map(\.element)
        }
    }
}
