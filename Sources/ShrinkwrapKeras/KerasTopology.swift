import ShrinkwrapIR

/// One output of one call of a layer: Keras' (layer name, node index, tensor index).
struct KerasRef: Sendable, Equatable, Hashable {
    var layer: String
    var node: Int
    var tensor: Int
}

/// A layer as the configuration describes it, with the calls that feed it.
struct KerasLayer: Sendable {
    var name: String
    var className: String
    /// The layer's own `config` object.
    var config: KerasJSON
    /// For each call of the layer (a shared layer is called more than once), the tensors it reads.
    var calls: [[KerasRef]]
    /// Each call's keyword arguments that are not tensors (Keras 2 `kwargs`, Keras 3 `kwargs`).
    var callOptions: [[String: KerasJSON]]

    /// "layer 'conv2d' (Conv2D)", for messages.
    var label: String { "layer '\(name)' (\(className))" }
}

/// A model's layers and where its inputs and outputs are: Sequential models
/// become the chain they describe, so that the translator sees one shape.
struct KerasTopology: Sendable {
    var name: String
    var layers: [KerasLayer]
    var inputs: [KerasRef]
    var outputs: [KerasRef]

    static let modelClasses: Set<String> = ["Functional", "Model", "Sequential"]

    /// `model` is `{"class_name": …, "config": …}`; `place` names it in messages.
    static func parse(_ model: KerasJSON, file: String, place: String) throws -> KerasTopology {
        let loc = SourceLocation(file: file, place: place)
        guard let cls = model["class_name"]?.string else {
            throw ImportError.malformed(loc, reason: "the model configuration has no class_name")
        }
        guard let config = model["config"] else { throw ImportError.malformed(loc, reason: "the model configuration has no config") }
        switch cls {
        case "Sequential": return try sequential(config, file: file, place: place)
        case "Functional", "Model": return try functional(config, file: file, place: place)
        default:
            throw ImportError.unsupported(loc, what: "a model of class \(cls) (subclassed models keep no layer graph: save a Functional or Sequential model)")
        }
    }

    // MARK: - Sequential

    private static func sequential(_ config: KerasJSON, file: String, place: String) throws -> KerasTopology {
        let loc = SourceLocation(file: file, place: place)
        // Keras ≤ 2.2 wrote the layer list itself as the config.
        guard let entries = config.array ?? config["layers"]?.array else {
            throw ImportError.malformed(loc, reason: "a Sequential model without a layer list")
        }
        let name = config["name"]?.string ?? "sequential"
        var layers: [KerasLayer] = []
        for (i, e) in entries.enumerated() {
            layers.append(try layer(e, index: i, file: file, place: place, functional: false))
        }
        guard let first = layers.first else { throw ImportError.malformed(loc, reason: "a Sequential model without layers") }
        var chain: [KerasLayer] = []
        if first.className != "InputLayer" {
            // The input comes from the first layer's batch_input_shape, or the model's build shape (Keras 3).
            guard let shape = first.config["batch_input_shape"] ?? first.config["batch_shape"] ?? config["build_input_shape"] else {
                throw ImportError.unsupported(SourceLocation(file: file, place: place + ", " + first.label),
                                              what: "a Sequential model whose input shape is not saved (build it or give it an Input first)")
            }
            let dtype = first.config["dtype"]?.string.map(KerasJSON.string) ?? .string("float32")
            chain.append(KerasLayer(name: first.name + "_input", className: "InputLayer",
                                    config: .object(["batch_input_shape": shape, "dtype": dtype]), calls: [], callOptions: []))
        }
        for var l in layers {
            if l.className != "InputLayer", let previous = chain.last {
                l.calls = [[KerasRef(layer: previous.name, node: 0, tensor: 0)]]
                l.callOptions = [[:]]
            }
            chain.append(l)
        }
        guard let input = chain.first, let output = chain.last else { throw ImportError.malformed(loc, reason: "a Sequential model without layers") }
        try checkUniqueNames(chain, file: file, place: place)
        return KerasTopology(name: name, layers: chain, inputs: [KerasRef(layer: input.name, node: 0, tensor: 0)],
                             outputs: [KerasRef(layer: output.name, node: 0, tensor: 0)])
    }

    // MARK: - Functional

    private static func functional(_ config: KerasJSON, file: String, place: String) throws -> KerasTopology {
        let loc = SourceLocation(file: file, place: place)
        guard let entries = config["layers"]?.array else { throw ImportError.malformed(loc, reason: "a Functional model without a layer list") }
        var layers: [KerasLayer] = []
        for (i, e) in entries.enumerated() {
            layers.append(try layer(e, index: i, file: file, place: place, functional: true))
        }
        try checkUniqueNames(layers, file: file, place: place)
        guard let ins = config["input_layers"], let outs = config["output_layers"] else {
            throw ImportError.malformed(loc, reason: "a Functional model without input_layers / output_layers")
        }
        return KerasTopology(name: config["name"]?.string ?? "model", layers: layers,
                             inputs: try endpoints(ins, loc: loc, what: "input_layers"), outputs: try endpoints(outs, loc: loc, what: "output_layers"))
    }

    /// `[[name, node, tensor], …]`, or one `[name, node, tensor]` (Keras 3 with one input or output).
    private static func endpoints(_ v: KerasJSON, loc: SourceLocation, what: String) throws -> [KerasRef] {
        guard let a = v.array, !a.isEmpty else { throw ImportError.malformed(loc, reason: "\(what) is empty or not a list") }
        if a.first?.string != nil { return [try ref(v, loc: loc, what: what)] }
        return try a.map { try ref($0, loc: loc, what: what) }
    }

    private static func ref(_ v: KerasJSON, loc: SourceLocation, what: String) throws -> KerasRef {
        guard let a = v.array, a.count >= 3, let name = a[0].string, let node = a[1].int, let tensor = a[2].int, node >= 0, tensor >= 0 else {
            throw ImportError.malformed(loc, reason: "\(what): expected [layer name, node index, tensor index]")
        }
        return KerasRef(layer: name, node: node, tensor: tensor)
    }

    private static func layer(_ e: KerasJSON, index: Int, file: String, place: String, functional: Bool) throws -> KerasLayer {
        let loc = SourceLocation(file: file, place: "\(place), layers[\(index)]")
        guard let cls = e["class_name"]?.string else { throw ImportError.malformed(loc, reason: "a layer without class_name") }
        let config = e["config"] ?? .object([:])
        guard let name = e["name"]?.string ?? config["name"]?.string else { throw ImportError.malformed(loc, reason: "a \(cls) layer without a name") }
        var l = KerasLayer(name: name, className: cls, config: config, calls: [], callOptions: [])
        guard functional, let nodes = e["inbound_nodes"]?.array else { return l }
        let here = SourceLocation(file: file, place: "\(place), \(l.label)")
        for node in nodes {
            let (refs, options) = try call(node, loc: here)
            l.calls.append(refs)
            l.callOptions.append(options)
        }
        return l
    }

    /// One inbound node: Keras 2 `[[name, node, tensor, kwargs], …]`, Keras 3 `{"args": …, "kwargs": …}`.
    private static func call(_ node: KerasJSON, loc: SourceLocation) throws -> ([KerasRef], [String: KerasJSON]) {
        if let entries = node.array {
            var refs: [KerasRef] = []
            var options: [String: KerasJSON] = [:]
            for e in entries {
                refs.append(try ref(e, loc: loc, what: "inbound node"))
                if let kw = e.array, kw.count > 3, let o = kw[3].object { options.merge(o) { a, _ in a } }
            }
            return (refs, options)
        }
        guard node.object != nil else { throw ImportError.malformed(loc, reason: "an inbound node that is neither a list nor an object") }
        var refs: [KerasRef] = []
        try collectTensors(node["args"] ?? .array([]), into: &refs, loc: loc, depth: 0)
        var options: [String: KerasJSON] = [:]
        for (k, v) in node["kwargs"]?.object ?? [:] {
            var inner: [KerasRef] = []
            try collectTensors(v, into: &inner, loc: loc, depth: 0)
            if inner.isEmpty { options[k] = v } else { refs += inner }
        }
        return (refs, options)
    }

    /// Keras 3 tensors in call arguments: `{"class_name": "__keras_tensor__", "config": {"keras_history": [name, node, tensor]}}`, nested in lists.
    private static func collectTensors(_ v: KerasJSON, into refs: inout [KerasRef], loc: SourceLocation, depth: Int) throws {
        guard depth < 64 else { throw ImportError.malformed(loc, reason: "call arguments nested deeper than 64") }
        if v["class_name"]?.string == "__keras_tensor__" {
            guard let h = v["config"]?["keras_history"] else { throw ImportError.malformed(loc, reason: "a tensor argument without keras_history") }
            refs.append(try ref(h, loc: loc, what: "keras_history"))
        } else if let a = v.array {
            for x in a { try collectTensors(x, into: &refs, loc: loc, depth: depth + 1) }
        }
    }

    private static func checkUniqueNames(_ layers: [KerasLayer], file: String, place: String) throws {
        var seen = Set<String>()
        for l in layers where !seen.insert(l.name).inserted {
            throw ImportError.malformed(SourceLocation(file: file, place: place), reason: "two layers are named '\(l.name)'")
        }
    }
}
