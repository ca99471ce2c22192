import CKernels
import ShrinkwrapIR

/// An activation the interpreter's planner runs inside the node that produces its input (a Conv's
/// epilogue), on each output block while it is still in cache. Each case applies the arithmetic of
/// the standalone kernel (`ActivationKernels`' functors, `SIMDKernels`' vector math), element by
/// element, so a fused activation gives the same bits as the separate node.
///
/// This is the one list of what may be fused: the planner asks `init(node:value:rank:constant:)`
/// and writes `attributes(_:)`; the kernel reads them back with `list(_:channels:)`.
public enum FusedActivation: Equatable, Sendable {
    case relu
    case clip(lo: Float, hi: Float)
    case leakyRelu(alpha: Float)
    /// PRelu with one slope per channel (or one for all).
    case prelu(slopes: [Float])
    case vector(SIMDKernels.Unary)
    /// Max / Min of the value and a constant scalar (`scalarFirst`: the scalar was the first operand).
    case max(Float, scalarFirst: Bool)
    case min(Float, scalarFirst: Bool)
    /// x · Sigmoid(x) written as two nodes, Sigmoid(x) and Mul(x, ·) (YOLOv8's SiLU): on float32
    /// values `sk_swish` with α = 1 gives their bits (1 · x = x, then the same sigmoid and product);
    /// float16 values run the two kernels (one rounding each).
    case silu
    /// x · Clip(x + 3, 0, 6) / 6 written as four nodes, Add, Clip, Mul and Div (paddle2onnx's
    /// hardswish, after most Convs of the PP-OCR and PP-Picodet models): each step is rounded as its
    /// node rounds it (a divide by 6, not a multiply by 1/6), so the bits are the four nodes'.
    case hardSwishOps
    /// Add / Sub / Mul / Div of the value and a constant scalar (`scalarFirst`: the scalar was the first
    /// operand), one rounded operation as the node's: the LearnableAffineBlock (a scale, then a bias) that
    /// PP-OCR v4 / v5 puts around the activation after its convs.
    case arithmetic(Arithmetic, Float, scalarFirst: Bool)

    public enum Arithmetic: String, Sendable, CaseIterable {
        case add = "Add", sub = "Sub", mul = "Mul", div = "Div"
    }

    /// The planner-internal attributes fused activations are written to, in the order they run:
    /// their op types, their parameters one after another, and how many parameters each has.
    public static let nameAttribute = "__shrinkwrap_fused_activation"
    public static let parametersAttribute = "__shrinkwrap_fused_activation_parameters"
    public static let countsAttribute = "__shrinkwrap_fused_activation_counts"

    /// The activation `node` computes on `value`, a rank-`rank` NCHW value, when it is a
    /// single-output float activation whose parameters are known at load time (`constant` gives
    /// constant inputs, e.g. Clip's bounds, PRelu's slopes, Max's scalar).
    public init?(node: Node, value: String, rank: Int, constant: (String) -> Tensor?) {
        guard node.outputs.count == 1, !value.isEmpty, node.inputs.contains(value) else { return nil }
        if !["Max", "Min", "Add", "Sub", "Mul", "Div"].contains(node.opType) && node.inputs.first != value { return nil }
        func float(_ key: String, _ def: Float) -> Float? {
            switch node.attributes[key] {
            case nil: return def
            case .float(let v)?: return v
            default: return nil
            }
        }
        switch node.opType {
        case "Relu" where node.inputs.count == 1: self = .relu
        case "LeakyRelu" where node.inputs.count == 1:
            guard let a = float("alpha", 0.01) else { return nil }
            self = .leakyRelu(alpha: a)
        case "PRelu" where node.inputs.count == 2:
            // One slope, or one per channel (axis 1 of the rank-`rank` input once the slope's shape is
            // aligned to its trailing axes): [C, 1, 1] or [1, C, 1, 1] for a 2-D NCHW value.
            guard let t = constant(node.inputs[1]), t.dtype == .float32, let v = t.floats, !v.isEmpty,
                  t.rank <= rank else { return nil }
            if v.count > 1 {
                let channelAxis = 1 - (rank - t.rank)
                guard channelAxis >= 0,
                      t.shape.enumerated().allSatisfy({ $0.offset == channelAxis ? $0.element == v.count : $0.element == 1 })
                else { return nil }
            }
            self = .prelu(slopes: v)
        case "Max" where node.inputs.count == 2, "Min" where node.inputs.count == 2:
            // The value and a constant scalar (either side) that does not widen the value's rank.
            guard node.inputs.filter({ $0 == value }).count == 1, let side = node.inputs.firstIndex(where: { $0 != value }),
                  let t = constant(node.inputs[side]), t.dtype == .float32, t.count == 1, t.rank <= rank,
                  let v = t.floats?.first else { return nil }
            self = node.opType == "Max" ? .max(v, scalarFirst: side == 0) : .min(v, scalarFirst: side == 0)
        case "Add" where node.inputs.count == 2, "Sub" where node.inputs.count == 2, "Mul" where node.inputs.count == 2,
             "Div" where node.inputs.count == 2:
            guard node.inputs.filter({ $0 == value }).count == 1, let side = node.inputs.firstIndex(where: { $0 != value }),
                  let t = constant(node.inputs[side]), t.dtype == .float32, t.count == 1, t.rank <= rank,
                  let v = t.floats?.first, let op = Arithmetic(rawValue: node.opType) else { return nil }
            self = .arithmetic(op, v, scalarFirst: side == 0)
        case "HardSwish" where node.inputs.count == 1: self = .vector(.hardSwish)
        case "Sigmoid" where node.inputs.count == 1: self = .vector(.sigmoid)
        case "Tanh" where node.inputs.count == 1: self = .vector(.tanh)
        case "HardSigmoid" where node.inputs.count == 1:
            guard let a = float("alpha", 0.2), let b = float("beta", 0.5) else { return nil }
            self = .vector(.hardSigmoid(alpha: a, beta: b))
        case "Clip":
            guard node.attributes["min"] == nil, node.attributes["max"] == nil, node.inputs.count <= 3 else { return nil }
            var bounds: [Float] = [-.infinity, .infinity]
            for i in 1..<node.inputs.count where !node.inputs[i].isEmpty {
                guard let t = constant(node.inputs[i]), t.count == 1, let v = t.floats?.first else { return nil }
                bounds[i - 1] = v
            }
            self = .clip(lo: bounds[0], hi: bounds[1])
        default: return nil
        }
    }

    /// The op type and parameters this activation is written as.
    var encoded: (name: String, parameters: [Float]) {
        switch self {
        case .relu: return ("Relu", [])
        case .clip(let lo, let hi): return ("Clip", [lo, hi])
        case .leakyRelu(let a): return ("LeakyRelu", [a])
        case .prelu(let v): return ("PRelu", v)
        case .max(let v, let first): return ("Max", [v, first ? 1 : 0])
        case .min(let v, let first): return ("Min", [v, first ? 1 : 0])
        case .silu: return ("SiLU", [])
        case .hardSwishOps: return ("HardSwishOps", [])
        case .arithmetic(let op, let v, let first): return (op.rawValue, [v, first ? 1 : 0])
        case .vector(let f):
            switch f {
            case .hardSwish: return ("HardSwish", [])
            case .sigmoid: return ("Sigmoid", [])
            case .tanh: return ("Tanh", [])
            case .exp: return ("Exp", [])
            case .swish(let a): return ("Swish", [a])
            case .hardSigmoid(let a, let b): return ("HardSigmoid", [a, b])
            }
        }
    }

    /// The planner attributes for `list`, run in order.
    public static func attributes(_ list: [FusedActivation]) -> [String: Attribute] {
        let e = list.map(\.encoded)
        return [nameAttribute: .strings(e.map(\.name)), parametersAttribute: .floats(e.flatMap(\.parameters)),
                countsAttribute: .ints(e.map(\.parameters.count))]
    }

    /// The activations the planner already fused into `node` (empty for none; nil when unreadable).
    public static func fused(in node: Node, channels: Int? = nil) -> [FusedActivation]? {
        guard node.attributes[nameAttribute] != nil else { return [] }
        guard case .strings(let names)? = node.attributes[nameAttribute], case .ints(let counts)? = node.attributes[countsAttribute],
              counts.count == names.count, counts.allSatisfy({ $0 >= 0 }) else { return nil }
        var params: [Float] = []
        if case .floats(let v)? = node.attributes[parametersAttribute] { params = v }
        guard counts.reduce(0, +) == params.count else { return nil }
        var list: [FusedActivation] = [], at = 0
        for (name, n) in zip(names, counts) {
            guard let a = FusedActivation(name: name, parameters: Array(params[at..<(at + n)]), channels: channels) else { return nil }
            list.append(a)
            at += n
        }
        return list
    }

    /// The activation written as `name` and `p`, checked (PRelu: 1 slope or `channels` when given).
    init?(name: String, parameters p: [Float], channels: Int?) {
        switch (name, p.count) {
        case ("Relu", 0): self = .relu
        case ("Clip", 2): self = .clip(lo: p[0], hi: p[1])
        case ("LeakyRelu", 1): self = .leakyRelu(alpha: p[0])
        case ("PRelu", let n) where n == 1 || (n > 0 && (channels == nil || n == channels)): self = .prelu(slopes: p)
        case ("Max", 2): self = .max(p[0], scalarFirst: p[1] != 0)
        case ("Min", 2): self = .min(p[0], scalarFirst: p[1] != 0)
        case ("SiLU", 0): self = .silu
        case ("HardSwishOps", 0): self = .hardSwishOps
        case ("Add", 2), ("Sub", 2), ("Mul", 2), ("Div", 2):
            guard let op = Arithmetic(rawValue: name) else { return nil }
            self = .arithmetic(op, p[0], scalarFirst: p[1] != 0)
        case ("HardSwish", 0): self = .vector(.hardSwish)
        case ("Sigmoid", 0): self = .vector(.sigmoid)
        case ("Tanh", 0): self = .vector(.tanh)
        case ("Exp", 0): self = .vector(.exp)
        case ("Swish", 1): self = .vector(.swish(alpha: p[0]))
        case ("HardSigmoid", 2): self = .vector(.hardSigmoid(alpha: p[0], beta: p[1]))
        default: return nil
        }
    }

    /// What the planner wrote into a node with `channels` output channels (empty when it fused
    /// none); throws when the attributes do not read back.
    static func list(_ c: KernelContext, channels: Int) throws -> [FusedActivation] {
        guard let list = fused(in: c.node, channels: channels) else {
            throw c.badAttribute(nameAttribute, "fused activations that do not read back (names, parameters and counts must agree)")
        }
        return list
    }

    /// Whether f(round₁₆(x)) = round₁₆(f(x)) for every x, so the activation may run before a
    /// float16 / bfloat16 result is rounded (monotone clamps at representable bounds).
    var commutesWithRounding: Bool { self == .relu }

    /// The activation as its own node's kernel on `x` (a Conv result whose residual broadcast it
    /// to another shape, or float16 values): the ops' own kernels, so their exact semantics.
    func standalone(_ x: Tensor, threads: Int, label: String) throws -> Tensor {
        if self == .silu {
            let sigmoid = try FusedActivation.vector(.sigmoid).standalone(x, threads: threads, label: label)
            let node = Node(name: "\(label) Mul", opType: "Mul", inputs: ["a", "b"], outputs: ["y"])
            return try ElementwiseKernels.mul(KernelContext(node: node, inputs: [x, sigmoid], threads: threads))[0]
        }
        if self == .hardSwishOps {
            // The four nodes' kernels, their constants in x's dtype as the graph had them (float32 or float16).
            let scalar = { (v: Float) in Tensor(dtype: x.dtype, shape: [], storage: .float([v])) }
            func node(_ op: String) -> Node { Node(name: "\(label) \(op)", opType: op, inputs: ["a", "b"], outputs: ["y"]) }
            let t = try ElementwiseKernels.add(KernelContext(node: node("Add"), inputs: [x, scalar(3)], threads: threads))[0]
            let c = try FusedActivation.clip(lo: 0, hi: 6).standalone(t, threads: threads, label: label)
            let m = try ElementwiseKernels.mul(KernelContext(node: node("Mul"), inputs: [x, c], threads: threads))[0]
            return try ElementwiseKernels.div(KernelContext(node: node("Div"), inputs: [m, scalar(6)], threads: threads))[0]
        }
        let op = encoded.name
        var inputs: [Tensor?] = [x], attributes: [String: Attribute] = [:]
        let scalar = { (v: Float) in Tensor(dtype: x.dtype, shape: [], storage: .float([v])) }
        switch self {
        case .relu, .silu, .hardSwishOps: break
        case .clip(let lo, let hi): inputs += [scalar(lo), scalar(hi)]
        case .leakyRelu(let a): attributes["alpha"] = .float(a)
        case .max(let v, let first), .min(let v, let first), .arithmetic(_, let v, let first):
            let k = Tensor([v], shape: [])  // float32, as the planner took it
            inputs = first ? [k, x] : [x, k]
        case .prelu(let v):
            // One slope per channel (axis 1): [C, 1, …] against the value's trailing axes.
            let shape = v.count == 1 ? [1] : [v.count] + [Int](repeating: 1, count: Swift.max(x.rank - 2, 0))
            inputs.append(Tensor(v, shape: shape))  // float32 slopes, as the planner took them
        case .vector(let f):
            switch f {
            case .swish(let a): attributes["alpha"] = .float(a)
            case .hardSigmoid(let a, let b): attributes = ["alpha": .float(a), "beta": .float(b)]
            default: break
            }
        }
        guard let kernel = KernelRegistry.kernels[op] else { throw KernelError.noKernel(op: op) }
        let node = Node(name: "\(label) \(op)", opType: op, inputs: inputs.indices.map { "i\($0)" }, outputs: ["y"],
                        attributes: attributes)
        guard let y = try kernel(KernelContext(node: node, inputs: inputs, threads: threads)).first else {
            throw KernelError.noKernel(op: op)
        }
        return y
    }

    /// Applies it in place to `count` values of output channel `channel`.
    @inline(__always)
    func apply(_ p: UnsafeMutablePointer<Float>, count: Int, channel: Int) {
        // CKernels' vector loops compute the functors' expressions (ActivationKernels.ReluF, ClipF,
        // LeakyReluF, PReluF, EWOps.MaxF / MinF) element for element: the same bits.
        let level = SIMDKernels.level
        switch self {
        case .relu: sk_unary_simple(level, Int32(SK_RELU), p, p, count, 0, 0)
        case .clip(let lo, let hi): sk_unary_simple(level, Int32(SK_CLIP), p, p, count, lo, hi)
        case .leakyRelu(let alpha): sk_unary_simple(level, Int32(SK_LEAKY_RELU), p, p, count, alpha, 0)
        case .max(let v, let first):
            if first { sk_binary(level, Int32(SK_MAX), nil, v, p, 0, p, count) } else { sk_binary(level, Int32(SK_MAX), p, 0, nil, v, p, count) }
        case .min(let v, let first):
            if first { sk_binary(level, Int32(SK_MIN), nil, v, p, 0, p, count) } else { sk_binary(level, Int32(SK_MIN), p, 0, nil, v, p, count) }
        case .prelu(let slopes):
            let k = slopes.count == 1 ? slopes[0] : slopes[channel % slopes.count]
            sk_unary_simple(level, Int32(SK_PRELU), p, p, count, k, 0)
        case .vector(let f):
            SIMDKernels.apply(f, UnsafePointer(p), p, count: count)
        case .silu:
            SIMDKernels.apply(.swish(alpha: 1), UnsafePointer(p), p, count: count)
        case .arithmetic(let op, let v, let first):
            let code: Int32
            switch op {
            case .add: code = Int32(SK_ADD)
            case .sub: code = Int32(SK_SUB)
            case .mul: code = Int32(SK_MUL)
            case .div: code = Int32(SK_DIV)
            }
            if first { sk_binary(level, code, nil, v, p, 0, p, count) } else { sk_binary(level, code, p, 0, nil, v, p, count) }
        case .hardSwishOps:
            // Add 3, Clip(0, 6), Mul by the value, Div by 6: the four kernels' element operations.
            withUnsafeTemporaryAllocation(of: Float.self, capacity: 1024) { buffer in
                guard let t = buffer.baseAddress else { return }
                var at = 0
                while at < count {
                    let n = Swift.min(1024, count - at), x = p + at
                    sk_binary(level, Int32(SK_ADD), x, 0, nil, 3, t, n)
                    sk_unary_simple(level, Int32(SK_CLIP), t, t, n, 0, 6)
                    sk_binary(level, Int32(SK_MUL), x, 0, t, 0, x, n)
                    sk_binary(level, Int32(SK_DIV), x, 0, nil, 6, x, n)
                    at += n
                }
            }
        }
    }
}
