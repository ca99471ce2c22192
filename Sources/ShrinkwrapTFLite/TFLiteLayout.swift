import ShrinkwrapIR

/// The graph as the TFLite exporter rewrites it before writing: nodes, the
/// static shape and element type of every value, and the constants (the
/// graph's plus the ones the rewrites make).
struct ExportGraph {
    var nodes: [Node]
    var shapes: [String: [Int]]
    var dtypes: [String: DType]
    var constants: [String: WeightEncoding]
    let outputs: Set<String>
    var used: Set<String>
    var counter = 0

    init(_ g: Graph) throws {
        nodes = g.nodes
        var shapes: [String: [Int]] = [:]
        var dtypes: [String: DType] = [:]
        for (name, info) in g.valueInfo {
            if let s = info.staticShape { shapes[name] = s }
            if let d = info.dtype { dtypes[name] = d }
        }
        for i in g.inputs {
            if let s = i.staticShape { shapes[i.name] = s }
            if let d = i.dtype { dtypes[i.name] = d }
        }
        for o in g.outputs {
            if let s = o.staticShape { shapes[o.name] = s }
            if let d = o.dtype { dtypes[o.name] = d }
        }
        var constants: [String: WeightEncoding] = [:]
        for c in g.constants {
            constants[c.name] = c.encoding
            shapes[c.name] = c.encoding.shape
            dtypes[c.name] = c.encoding.decodedDType
        }
        self.shapes = shapes
        self.dtypes = dtypes
        self.constants = constants
        outputs = Set(g.outputs.map(\.name))
        var used = Set(shapes.keys)
        for n in g.nodes { used.formUnion(n.outputs); used.formUnion(n.inputs) }
        self.used = used
    }

    mutating func fresh(_ base: String) -> String {
        var name: String
        repeat {
            counter += 1
            name = "\(base)__\(counter)"
        } while used.contains(name)
        used.insert(name)
        return name
    }

    mutating func addConstant(_ base: String, _ e: WeightEncoding) -> String {
        let name = fresh(base)
        constants[name] = e
        shapes[name] = e.shape
        dtypes[name] = e.decodedDType
        return name
    }

    func isConstant(_ v: String) -> Bool { constants[v] != nil }
}

extension WeightEncoding {
    /// The element type the weight decodes to.
    var decodedDType: DType {
        switch self {
        case .dense(let t): return t.dtype
        default: return .float32
        }
    }
}

/// NCHW (the IR's layout) → NHWC (TFLite's): every layout-sensitive node is
/// wrapped in Transposes and renamed "NHWC.<op>"; Transposes are then moved
/// down through element-wise ops and concatenations, pairs that undo each
/// other are removed, and dead nodes dropped. A graph imported from TFLite
/// (NHWC at its boundary) comes back without Transposes; an ONNX graph keeps
/// one at each end of every NHWC region.
enum TFLiteLayout {
    static let toNHWC = [0, 2, 3, 1]
    static let toNCHW = [0, 3, 1, 2]

    /// Ops that compute in NHWC in TFLite (input 0 is the image).
    static let spatialOps: Set<String> = [
        "Conv", "ConvTranspose", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool",
        "LRN", "Resize", "DepthToSpace", "SpaceToDepth",
    ]
    /// Ops applied element by element to input 0 (other inputs scalars).
    static let unaryOps: Set<String> = [
        "Relu", "Sigmoid", "Tanh", "Clip", "LeakyRelu", "Elu", "HardSwish", "HardSigmoid", "Exp", "Log", "Sqrt",
        "Abs", "Neg", "Floor", "Ceil", "Round", "Sin", "Cos", "Reciprocal", "Identity", "Dropout", "Softplus", "Erf", "Not", "Cast",
    ]
    /// Broadcasting element-wise ops.
    static let broadcastOps: Set<String> = ["Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "PRelu"]

    static func rewrite(_ g: inout ExportGraph) throws {
        try decomposeBatchNorm(&g)
        wrapSpatial(&g)
        var changed = true
        while changed {
            changed = false
            if sinkOne(&g) { changed = true; continue }
            if cancelOne(&g) { changed = true }
        }
        removeDead(&g)
        renameIntoOutputs(&g)
        fuseActivations(&g)
    }

    /// The attribute naming the fused activation of the op that writes a
    /// node (TFLite ActivationFunctionType: 1 RELU, 2 RELU_N1_TO_1, 3 RELU6, 4 TANH).
    static let fusedActivation = "tflite.fused_activation"

    /// A Relu / Clip(0, 6) / Clip(−1, 1) alone reading the output of a
    /// convolution, fully connected layer or element-wise arithmetic becomes
    /// that op's fused activation, as TFLite's converter writes it. (TF 2.12's
    /// kernels refuse a fused TANH in FULLY_CONNECTED and any fused activation
    /// in CONCATENATION, so those stay separate ops.)
    static func fuseActivations(_ g: inout ExportGraph) {
        func code(_ n: Node) -> Int? {
            switch n.opType {
            case "Relu": return 1
            case "Clip":
                func bound(_ k: Int, _ attr: String) -> Float? {
                    if let v = n.input(k) { return g.constants[v]?.decoded().floats?.first }
                    if case .float(let f)? = n.attributes[attr] { return f }
                    return nil
                }
                let lo = bound(1, "min"), hi = bound(2, "max")
                if lo == 0 && hi == 6 { return 3 }
                if lo == -1 && hi == 1 { return 2 }
                if lo == 0 && (hi == nil || hi == .infinity) { return 1 }
                return nil
            default: return nil
            }
        }
        func fusable(_ p: Node) -> Bool {
            guard p.outputs.count == 1, p.attributes[fusedActivation] == nil else { return false }
            switch p.opType {
            case "Add", "Sub", "Mul", "Div": return p.inputs.filter { !$0.isEmpty }.count == 2
            case "MatMul": return p.input(1).flatMap { g.constants[$0]?.shape.count } == 2
            case "Gemm":
                guard let b = p.input(1), g.isConstant(b), p.float("alpha", 1) == 1, p.int("transA", 0) == 0 else { return false }
                guard let c = p.input(2) else { return true }
                guard let ce = g.constants[c], let n = g.shapes[p.outputs[0]]?.last else { return false }
                return p.float("beta", 1) == 1 && ce.count == n
            case "NHWC.Conv":
                guard let x = p.input(0), let cin = g.shapes[x]?.last, let w = p.input(1), let ws = g.constants[w]?.shape, ws.count == 4 else { return false }
                let groups = p.int("group", 1)
                return groups == 1 || (groups == cin && ws[1] == 1 && ws[0] % cin == 0)
            default: return false
            }
        }
        var k = 0
        while k < g.nodes.count {
            let a = g.nodes[k]
            guard let c = code(a), let x = a.input(0), let y = a.outputs.first, !g.outputs.contains(x),
                  let p = g.nodes.firstIndex(where: { $0.outputs == [x] }), fusable(g.nodes[p]),
                  g.nodes.filter({ $0.inputs.contains(x) }).count == 1 else { k += 1; continue }
            g.nodes[p].attributes[fusedActivation] = .int(c)
            g.nodes[p].outputs = [y]
            g.nodes.remove(at: k)
        }
    }

    /// An Identity from a value some node computes into a graph output: the
    /// node writes the output directly (readers of the value read the output).
    static func renameIntoOutputs(_ g: inout ExportGraph) {
        var k = 0
        while k < g.nodes.count {
            let n = g.nodes[k]
            guard n.opType == "Identity", let x = n.input(0), let y = n.outputs.first, g.outputs.contains(y), !g.outputs.contains(x),
                  let p = g.nodes.firstIndex(where: { $0.outputs.contains(x) }) else { k += 1; continue }
            g.nodes[p].outputs = g.nodes[p].outputs.map { $0 == x ? y : $0 }
            for j in g.nodes.indices { g.nodes[j].inputs = g.nodes[j].inputs.map { $0 == x ? y : $0 } }
            g.nodes.remove(at: k)
        }
    }

    static func permute(_ s: [Int], _ p: [Int]) -> [Int] { p.map { s[$0] } }
    static func inverse(_ p: [Int]) -> [Int] {
        var q = [Int](repeating: 0, count: p.count)
        for (k, v) in p.enumerated() { q[v] = k }
        return q
    }

    /// A Transpose's permutation, when it is one (0..<rank, each once).
    static func perm(_ n: Node) -> [Int]? {
        if case .ints(let p)? = n.attributes["perm"], p.sorted() == Array(0..<p.count) { return p }
        return nil
    }

    /// BatchNormalization (inference) with constant parameters → Mul + Add by
    /// per-channel constants, which TFLite runs and the layout pass moves freely.
    static func decomposeBatchNorm(_ g: inout ExportGraph) throws {
        var out: [Node] = []
        for n in g.nodes {
            guard n.opType == "BatchNormalization", n.inputs.count >= 5, let x = n.input(0), let y = n.outputs.first,
                  let rank = g.shapes[x]?.count, rank >= 2,
                  let scale = g.constants[n.inputs[1]]?.decoded().doubles, let bias = g.constants[n.inputs[2]]?.decoded().doubles,
                  let mean = g.constants[n.inputs[3]]?.decoded().doubles, let variance = g.constants[n.inputs[4]]?.decoded().doubles,
                  scale.count == bias.count, mean.count == scale.count, variance.count == scale.count else {
                out.append(n)
                continue
            }
            var eps = 1e-5
            if case .float(let e)? = n.attributes["epsilon"] { eps = Double(e) }
            let c = scale.count
            var s = [Float](), t = [Float]()
            for k in 0..<c {
                let m = scale[k] / (variance[k] + eps).squareRoot()
                s.append(Float(m))
                t.append(Float(bias[k] - mean[k] * m))
            }
            let shape = [c] + [Int](repeating: 1, count: rank - 2)
            let sName = g.addConstant(y + "_bn_scale", .dense(Tensor(s, shape: shape)))
            let tName = g.addConstant(y + "_bn_shift", .dense(Tensor(t, shape: shape)))
            let mid = g.fresh(y + "_bn_scaled")
            g.shapes[mid] = g.shapes[y] ?? g.shapes[x]
            g.dtypes[mid] = .float32
            out.append(Node(name: n.name + "_scale", opType: "Mul", inputs: [x, sName], outputs: [mid]))
            out.append(Node(name: n.name, opType: "Add", inputs: [mid, tName], outputs: [y]))
        }
        g.nodes = out
    }

    static func wrapSpatial(_ g: inout ExportGraph) {
        var out: [Node] = []
        for n in g.nodes {
            guard spatialOps.contains(n.opType), let x = n.input(0), let xs = g.shapes[x], xs.count == 4,
                  n.outputs.count == 1, let y = n.outputs.first, let ys = g.shapes[y], ys.count == 4 else {
                out.append(n)
                continue
            }
            let xt = g.fresh(x + "_nhwc"), yt = g.fresh(y + "_nhwc")
            g.shapes[xt] = permute(xs, toNHWC)
            g.shapes[yt] = permute(ys, toNHWC)
            g.dtypes[xt] = g.dtypes[x]
            g.dtypes[yt] = g.dtypes[y]
            out.append(Node(name: g.fresh(n.name + "_to_nhwc"), opType: "Transpose", inputs: [x], outputs: [xt], attributes: ["perm": .ints(toNHWC)]))
            var m = n
            m.opType = "NHWC." + n.opType
            m.inputs[0] = xt
            m.outputs = [yt]
            out.append(m)
            out.append(Node(name: g.fresh(n.name + "_to_nchw"), opType: "Transpose", inputs: [yt], outputs: [y], attributes: ["perm": .ints(toNCHW)]))
        }
        g.nodes = out
    }

    /// Moves one Transpose below the element-wise op or concatenation that
    /// alone reads it. Returns false when none can move.
    static func sinkOne(_ g: inout ExportGraph) -> Bool {
        var producer: [String: Int] = [:]
        var readers: [String: [Int]] = [:]
        for (k, n) in g.nodes.enumerated() {
            for o in n.outputs where !o.isEmpty { producer[o] = k }
            for i in n.inputs where !i.isEmpty { readers[i, default: []].append(k) }
        }
        /// The Transpose feeding `v` with permutation `p`, read only by node `j`.
        func transposeInto(_ v: String, _ j: Int) -> (input: String, perm: [Int])? {
            guard let k = producer[v], g.nodes[k].opType == "Transpose", let p = perm(g.nodes[k]),
                  let src = g.nodes[k].input(0), !g.outputs.contains(v),
                  Set(readers[v] ?? []) == [j] else { return nil }
            return (src, p)
        }
        for (j, u) in g.nodes.enumerated() {
            let outs = u.outputs.filter { !$0.isEmpty }
            guard outs.count == 1, let y = outs.first, let ys = g.shapes[y] else { continue }
            let r = ys.count
            var p: [Int]?
            var newInputs = u.inputs
            var newConstants: [(index: Int, encoding: WeightEncoding)] = []
            var axisAttr: Attribute?
            if unaryOps.contains(u.opType) {
                guard let x = u.input(0), let t = transposeInto(x, j), t.perm.count == r else { continue }
                // The other inputs (Clip's bounds) must be scalars.
                guard u.inputs.dropFirst().allSatisfy({ $0.isEmpty || (g.constants[$0]?.count ?? 2) == 1 }) else { continue }
                if u.opType == "Dropout" && u.outputs.count > 1 && !u.outputs[1].isEmpty { continue }
                p = t.perm
                newInputs[0] = t.input
            } else if broadcastOps.contains(u.opType) || u.opType == "Concat" {
                var ok = true
                for (k, v) in u.inputs.enumerated() where !v.isEmpty {
                    if let t = transposeInto(v, j), t.perm.count == r, p == nil || p == t.perm {
                        p = t.perm
                        newInputs[k] = t.input
                    } else if u.opType != "Concat", let c = g.constants[v], c.shape.count <= r {
                        newConstants.append((k, c))
                    } else {
                        ok = false
                        break
                    }
                }
                guard ok, let q = p else { continue }
                let inv = inverse(q)
                var converted: [(Int, WeightEncoding)] = []
                for (k, c) in newConstants {
                    let full = [Int](repeating: 1, count: r - c.shape.count) + c.shape
                    guard let e = try? c.reshaped(full).transposed(inv) else { ok = false; break }
                    converted.append((k, e))
                }
                guard ok else { continue }
                for (k, e) in converted { newInputs[k] = g.addConstant(u.inputs[k] + "_nhwc", e) }
                if u.opType == "Concat" {
                    guard case .int(let a)? = u.attributes["axis"] else { continue }
                    let axis = a < 0 ? a + r : a
                    guard axis >= 0, axis < r else { continue }
                    axisAttr = .int(q[axis])
                }
            } else {
                continue
            }
            guard let q = p else { continue }
            let inv = inverse(q)
            let y2 = g.fresh(y + "_t")
            g.shapes[y2] = permute(ys, inv)
            g.dtypes[y2] = g.dtypes[y]
            var u2 = u
            u2.inputs = newInputs
            u2.outputs = u.outputs.map { $0 == y ? y2 : $0 }
            if let axisAttr { u2.attributes["axis"] = axisAttr }
            g.nodes[j] = u2
            g.nodes.insert(Node(name: g.fresh(u.name + "_transpose"), opType: "Transpose", inputs: [y2], outputs: [y],
                                attributes: ["perm": .ints(q)]), at: j + 1)
            removeDead(&g)
            return true
        }
        return false
    }

    /// Removes one Transpose that undoes the Transpose feeding it (its readers
    /// read the first one's input instead). Returns false when there is none.
    static func cancelOne(_ g: inout ExportGraph) -> Bool {
        var producer: [String: Int] = [:]
        for (k, n) in g.nodes.enumerated() { for o in n.outputs where !o.isEmpty { producer[o] = k } }
        for (k, n) in g.nodes.enumerated() where n.opType == "Transpose" {
            guard let mid = n.input(0), let pk = producer[mid], g.nodes[pk].opType == "Transpose",
                  let a = perm(g.nodes[pk]), let b = perm(n), a.count == b.count,
                  b.indices.allSatisfy({ a[b[$0]] == $0 }),
                  let source = g.nodes[pk].input(0), let out = n.outputs.first else { continue }
            if g.outputs.contains(out) {
                g.nodes[k] = Node(name: n.name, opType: "Identity", inputs: [source], outputs: [out])
            } else {
                g.nodes.remove(at: k)
                for j in g.nodes.indices { g.nodes[j].inputs = g.nodes[j].inputs.map { $0 == out ? source : $0 } }
            }
            removeDead(&g)
            return true
        }
        return false
    }

    /// Drops nodes none of whose outputs is read or is a graph output.
    static func removeDead(_ g: inout ExportGraph) {
        var changed = true
        while changed {
            changed = false
            var read = g.outputs
            for n in g.nodes { read.formUnion(n.inputs) }
            let before = g.nodes.count
            g.nodes.removeAll { n in !n.outputs.contains { read.contains($0) } }
            changed = g.nodes.count != before
        }
    }
}
