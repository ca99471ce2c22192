import ShrinkwrapIR

/// A Keras tensor as the graph holds it: a value name and Keras' shape (batch first,
/// nil for a dimension not known before run time). Values keep Keras' layout
/// (channels last); layers that compute channels first in the IR transpose around
/// themselves, and the importer cancels the pairs that meet.
struct KValue: Sendable, Equatable {
    var name: String
    var shape: [Int?]
    var rank: Int { shape.count }
}

/// One call of a layer, as a translator sees it.
struct KerasCall {
    var layer: KerasLayer
    var inputs: [KValue]
    /// Non-tensor call arguments (e.g. `training`, `mask` left out).
    var options: [String: KerasJSON]
    /// The nested models this call is inside, outermost first.
    var scope: [KerasScope]
    /// The graph's name for the call's first output.
    var outputName: String

    var config: KerasJSON { layer.config }

    /// The single input, or an error naming the layer.
    func input(_ file: String) throws -> KValue {
        guard inputs.count == 1, let x = inputs.first else {
            throw ImportError.malformed(SourceLocation(file: file, place: layer.label), reason: "expected one input, got \(inputs.count)")
        }
        return x
    }
}

/// Importer state: the nodes and constants made so far, value names, the weights.
struct KerasContext {
    let file: String
    let weights: KerasWeights?
    /// "2.12.0", "3.12.0": activations whose definition changed between Keras 2 and 3 ask it.
    let kerasVersion: String
    var nodes: [Node] = []
    var constants: [Constant] = []
    var names = NameAllocator(.suffixed)
    /// Each layer's weights, loaded once (a shared layer's calls read the same constants).
    private var loaded: [String: [Tensor]] = [:]
    /// Constants made from a layer's weights, by layer and purpose.
    private var made: [String: String] = [:]

    init(file: String, weights: KerasWeights?, kerasVersion: String) {
        self.file = file; self.weights = weights; self.kerasVersion = kerasVersion
    }

    var isKeras3: Bool { kerasVersion.hasPrefix("3") }

    func loc(_ layer: KerasLayer) -> SourceLocation { SourceLocation(file: file, place: layer.label) }

    func malformed(_ call: KerasCall, _ reason: String) -> ImportError { .malformed(loc(call.layer), reason: reason) }
    func unsupported(_ call: KerasCall, _ what: String) -> ImportError { .unsupported(loc(call.layer), what: what) }

    mutating func fresh(_ base: String) -> String { names.fresh(base) }

    /// Adds a node computing one fresh output from `base`; returns the output's name.
    @discardableResult
    mutating func emit(_ op: String, _ inputs: [String], _ attrs: [String: Attribute] = [:], out base: String) -> String {
        let y = fresh(base)
        nodes.append(Node(name: y, opType: op, inputs: inputs, outputs: [y], attributes: attrs))
        return y
    }

    /// Adds a node with several outputs.
    mutating func emit(_ op: String, _ inputs: [String], _ attrs: [String: Attribute] = [:], outs bases: [String]) -> [String] {
        let ys = bases.map { fresh($0) }
        nodes.append(Node(name: ys.first ?? fresh(op), opType: op, inputs: inputs, outputs: ys, attributes: attrs))
        return ys
    }

    mutating func constant(_ base: String, _ t: Tensor) -> String {
        let name = fresh(base)
        constants.append(Constant(name: name, tensor: t))
        return name
    }

    mutating func int64s(_ base: String, _ values: [Int]) -> String {
        constant(base, Tensor(ints: values.map(Int64.init), shape: [values.count]))
    }

    /// The layer's saved weights in Keras' order; `counts` lists the numbers of weights the
    /// layer's configuration allows (e.g. [1, 2] for a Dense with or without bias).
    mutating func layerWeights(_ call: KerasCall, counts: [Int]) throws -> [Tensor] {
        let key = (call.scope.map(\.name) + [call.layer.name]).joined(separator: "/")
        if let w = loaded[key] { return w }
        guard let weights else { throw malformed(call, "the file has no weights for this layer") }
        let w = try weights.tensors(for: call.layer, scope: call.scope)
        guard counts.contains(w.count) else {
            throw malformed(call, "\(w.count) saved weights, expected \(counts.map(String.init).joined(separator: " or "))")
        }
        loaded[key] = w
        return w
    }

    /// A constant made once per layer and `purpose` from its weights (shared layers reuse it).
    mutating func weightConstant(_ call: KerasCall, _ purpose: String, _ make: () throws -> Tensor) rethrows -> String {
        let key = (call.scope.map(\.name) + [call.layer.name, purpose]).joined(separator: "/")
        if let name = made[key] { return name }
        let name = constant(call.layer.name + "/" + purpose, try make())
        made[key] = name
        return name
    }

    // MARK: - Layout

    /// A channels-last value of rank ≥ 3 → channels first (what Conv and pools compute in).
    mutating func toChannelsFirst(_ x: KValue) -> String {
        let r = x.rank
        return emit("Transpose", [x.name], ["perm": .ints([0, r - 1] + Array(1..<(r - 1)))], out: x.name + "_nchw")
    }

    /// A channels-first value back to channels last, as the call's output.
    mutating func toChannelsLast(_ y: String, rank r: Int, out: String) -> String {
        emit("Transpose", [y], ["perm": .ints([0] + Array(2..<r) + [1])], out: out)
    }
}

extension Tensor {
    /// The tensor with its axes permuted (row-major float data).
    func permuted(_ perm: [Int]) -> Tensor {
        guard let v = floats, perm.count == rank else { return self }
        let newShape = perm.map { shape[$0] }
        let inStrides = stridesOf(shape)
        var out = [Float](repeating: 0, count: v.count)
        var index = [Int](repeating: 0, count: rank)
        for o in 0..<v.count {
            var src = 0
            for (k, p) in perm.enumerated() { src += index[k] * inStrides[p] }
            out[o] = v[src]
            var k = rank - 1
            while k >= 0 {
                index[k] += 1
                if index[k] < newShape[k] { break }
                index[k] = 0
                k -= 1
            }
        }
        return Tensor(out, shape: newShape)
    }
}
