import ShrinkwrapIR

/// An activation the interpreter's planner runs inside the node that produces its input (a Conv's
/// epilogue), on each output block while it is still in cache. Each case applies the arithmetic of
/// the standalone kernel (`ActivationKernels`' functors, `SIMDKernels`' vector math), element by
/// element, so a fused activation gives the same bits as the separate node.
///
/// This is the one list of what may be fused: the planner asks `init(node:constant:)`, the kernel
/// reads back what the planner wrote with `init(attributes:)`.
public enum FusedActivation: Equatable, Sendable {
    case relu
    case clip(lo: Float, hi: Float)
    case leakyRelu(alpha: Float)
    /// PRelu with one slope per channel (or one for all).
    case prelu(slopes: [Float])
    case vector(SIMDKernels.Unary)

    /// The planner-internal attributes a fused activation is written to: the op type, and its parameters.
    public static let nameAttribute = "__shrinkwrap_fused_activation"
    public static let parametersAttribute = "__shrinkwrap_fused_activation_parameters"

    /// The activation `node` computes on a rank-`rank` NCHW value, when it is a single-output float
    /// activation whose parameters are known at load time (`constant` gives constant inputs, e.g.
    /// Clip's bounds, PRelu's slopes).
    public init?(node: Node, rank: Int, constant: (String) -> Tensor?) {
        guard node.outputs.count == 1, let x = node.input(0), !x.isEmpty else { return nil }
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

    /// The planner attributes that name this activation.
    public var attributes: [String: Attribute] {
        switch self {
        case .relu: return [Self.nameAttribute: .string("Relu")]
        case .clip(let lo, let hi): return [Self.nameAttribute: .string("Clip"), Self.parametersAttribute: .floats([lo, hi])]
        case .leakyRelu(let a): return [Self.nameAttribute: .string("LeakyRelu"), Self.parametersAttribute: .floats([a])]
        case .prelu(let v): return [Self.nameAttribute: .string("PRelu"), Self.parametersAttribute: .floats(v)]
        case .vector(let f):
            switch f {
            case .hardSwish: return [Self.nameAttribute: .string("HardSwish")]
            case .sigmoid: return [Self.nameAttribute: .string("Sigmoid")]
            case .tanh: return [Self.nameAttribute: .string("Tanh")]
            case .exp: return [Self.nameAttribute: .string("Exp")]
            case .swish(let a): return [Self.nameAttribute: .string("Swish"), Self.parametersAttribute: .floats([a])]
            case .hardSigmoid(let a, let b):
                return [Self.nameAttribute: .string("HardSigmoid"), Self.parametersAttribute: .floats([a, b])]
            }
        }
    }

    /// What the planner wrote into a node with `channels` output channels (nil when it fused none);
    /// throws on anything else.
    init?(_ c: KernelContext, channels: Int) throws {
        guard c.node.attributes[Self.nameAttribute] != nil else { return nil }
        let name = try c.string(Self.nameAttribute, default: "")
        let p = try c.floats(Self.parametersAttribute) ?? []
        func parameters(_ n: Int) throws -> [Float] {
            guard p.count == n else { throw c.badAttribute(Self.parametersAttribute, "\(name) needs \(n) value(s), got \(p.count)") }
            return p
        }
        switch name {
        case "Relu": self = .relu
        case "Clip": let v = try parameters(2); self = .clip(lo: v[0], hi: v[1])
        case "LeakyRelu": self = .leakyRelu(alpha: try parameters(1)[0])
        case "PRelu":
            guard p.count == 1 || p.count == channels else {
                throw c.badAttribute(Self.parametersAttribute, "PRelu needs 1 or \(channels) slopes, got \(p.count)")
            }
            self = .prelu(slopes: p)
        case "HardSwish": self = .vector(.hardSwish)
        case "Sigmoid": self = .vector(.sigmoid)
        case "Tanh": self = .vector(.tanh)
        case "Exp": self = .vector(.exp)
        case "Swish": self = .vector(.swish(alpha: try parameters(1)[0]))
        case "HardSigmoid": let v = try parameters(2); self = .vector(.hardSigmoid(alpha: v[0], beta: v[1]))
        default: throw c.badAttribute(Self.nameAttribute, "names no fusable activation: '\(name)'")
        }
    }

    /// Whether f(round₁₆(x)) = round₁₆(f(x)) for every x, so the activation may run before a
    /// float16 / bfloat16 result is rounded (monotone clamps at representable bounds).
    var commutesWithRounding: Bool { self == .relu }

    /// The activation as its own node's kernel on `x` (a Conv result whose residual broadcast it
    /// to another shape, or float16 values): the ops' own kernels, so their exact semantics.
    func standalone(_ x: Tensor, threads: Int, label: String) throws -> Tensor {
        var op = "", inputs: [Tensor?] = [x], attributes: [String: Attribute] = [:]
        if case .string(let name)? = self.attributes[Self.nameAttribute] { op = name }
        let scalar = { (v: Float) in Tensor(dtype: x.dtype, shape: [], storage: .float([v])) }
        switch self {
        case .relu: break
        case .clip(let lo, let hi): inputs += [scalar(lo), scalar(hi)]
        case .leakyRelu(let a): attributes["alpha"] = .float(a)
        case .prelu(let v):
            // One slope per channel (axis 1): [C, 1, …] against the value's trailing axes.
            let shape = v.count == 1 ? [1] : [v.count] + [Int](repeating: 1, count: max(x.rank - 2, 0))
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
        switch self {
        case .relu:
            let f = ActivationKernels.ReluF()
            for i in 0..<count { p[i] = f(p[i]) }
        case .clip(let lo, let hi):
            let f = ActivationKernels.ClipF(lo: lo, hi: hi)
            for i in 0..<count { p[i] = f(p[i]) }
        case .leakyRelu(let alpha):
            let f = ActivationKernels.LeakyReluF(alpha: alpha)
            for i in 0..<count { p[i] = f(p[i]) }
        case .prelu(let slopes):
            let k = slopes.count == 1 ? slopes[0] : slopes[channel % slopes.count]
            let f = ActivationKernels.PReluF()
            for i in 0..<count { p[i] = f(p[i], k) }
        case .vector(let f):
            SIMDKernels.apply(f, UnsafePointer(p), p, count: count)
        }
    }
}
