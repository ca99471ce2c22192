import ShrinkwrapIR

/// Walks a model's layer graph and calls each layer's translator once per call,
/// nested models included (their layers translate inline, their weights found
/// under the nested model's scope).
extension KerasContext {
    /// Every layer class the translators do not know, in and under `topology`, as "Class (layer 'name')".
    static func unknownLayers(_ topology: KerasTopology, file: String, depth: Int = 0) throws -> [String] {
        var out: [String] = []
        for l in topology.layers {
            if KerasTopology.modelClasses.contains(l.className) {
                guard depth < 16 else { throw ImportError.malformed(SourceLocation(file: file, place: l.label), reason: "models nested deeper than 16") }
                let inner = try KerasTopology.parse(.object(["class_name": .string(l.className), "config": l.config]), file: file, place: l.label)
                out += try unknownLayers(inner, file: file, depth: depth + 1)
            } else if KerasLayers.table[l.className] == nil {
                out.append("\(l.className) (layer '\(l.name)')")
            }
        }
        return out
    }

    /// Translates `topology` with `inputs` bound to its input layers (a nested model);
    /// nil binds the top level's input layers to new graph inputs. Returns the outputs.
    mutating func translate(_ topology: KerasTopology, inputs bound: [KValue]?, scope: [KerasScope],
                            graphInputs: inout [ValueInfo]) throws -> [KValue] {
        var values: [KerasRef: KValue] = [:]
        let byName = Dictionary(topology.layers.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        for (i, r) in topology.inputs.enumerated() {
            guard let l = byName[r.layer] else {
                throw ImportError.malformed(SourceLocation(file: file, place: topology.name), reason: "input layer '\(r.layer)' is not among the layers")
            }
            if let bound {
                guard i < bound.count else { throw ImportError.malformed(loc(l), reason: "the nested model has more inputs than its call passes") }
                values[KerasRef(layer: l.name, node: 0, tensor: 0)] = bound[i]
            } else {
                let v = try inputValue(l)
                graphInputs.append(ValueInfo(name: v.name, dtype: try inputDType(l), shape: v.shape.enumerated().map { k, d in
                    d.map(Dim.fixed) ?? .symbolic(k == 0 ? "batch" : "\(v.name)_d\(k)")
                }))
                values[KerasRef(layer: l.name, node: 0, tensor: 0)] = v
            }
        }
        // Calls run when their inputs exist; the configuration lists layers in an order that allows it,
        // but a model saved from a graph with reused layers may not, so loop until nothing is left.
        var pending: [(KerasLayer, Int)] = topology.layers.filter { $0.className != "InputLayer" }.flatMap { l in l.calls.indices.map { (l, $0) } }
        while !pending.isEmpty {
            var next: [(KerasLayer, Int)] = []
            for (l, k) in pending {
                let refs = l.calls[k]
                guard refs.allSatisfy({ values[$0] != nil }) else { next.append((l, k)); continue }
                let outs = try translateCall(l, node: k, inputs: refs.compactMap { values[$0] }, scope: scope, topology: topology, graphInputs: &graphInputs)
                for (t, v) in outs.enumerated() { values[KerasRef(layer: l.name, node: k, tensor: t)] = v }
            }
            guard next.count < pending.count else {
                let (l, k) = next[0]
                let missing = l.calls[k].filter { values[$0] == nil }.map { "\($0.layer)[\($0.node)][\($0.tensor)]" }
                throw ImportError.malformed(loc(l), reason: "reads \(missing.joined(separator: ", ")), which no layer call makes")
            }
            pending = next
        }
        return try topology.outputs.map { r in
            guard let v = values[r] else {
                throw ImportError.malformed(SourceLocation(file: file, place: topology.name), reason: "output \(r.layer)[\(r.node)][\(r.tensor)] is not made by any layer call")
            }
            return v
        }
    }

    private mutating func translateCall(_ l: KerasLayer, node k: Int, inputs: [KValue], scope: [KerasScope], topology: KerasTopology,
                                        graphInputs: inout [ValueInfo]) throws -> [KValue] {
        let options = k < l.callOptions.count ? l.callOptions[k] : [:]
        if KerasTopology.modelClasses.contains(l.className) {
            let inner = try KerasTopology.parse(.object(["class_name": .string(l.className), "config": l.config]), file: file, place: l.label)
            var keys: [String: String] = [:]
            if case .keras3? = weights?.layout, let w = weights {
                let parent = scope.map { $0.key ?? $0.name }.reduce("") { $0 + "layers/" + $1 + "/" }
                keys[l.name] = try? w.keras3Key(l, parent: parent, scope: scope)
            }
            var innerScope = KerasScope(name: l.name, key: keys[l.name], layers: inner.layers)
            innerScope.keys = KerasScope.generatedKeys(inner.layers)
            return try translate(inner, inputs: inputs, scope: scope + [innerScope], graphInputs: &graphInputs)
        }
        guard let translator = KerasLayers.table[l.className] else {
            throw ImportError.unsupportedOps(file: file, ops: ["\(l.className) (layer '\(l.name)')"])
        }
        let base = (scope.map(\.name) + [l.name]).joined(separator: "/")
        let call = KerasCall(layer: l, inputs: inputs, options: options, scope: scope, outputName: k == 0 ? base : "\(base)_\(k)")
        return try translator(&self, call)
    }

    /// A graph input from an InputLayer: `batch_input_shape` (Keras 2) or `batch_shape` (Keras 3).
    private mutating func inputValue(_ l: KerasLayer) throws -> KValue {
        guard let shape = (l.config["batch_input_shape"] ?? l.config["batch_shape"])?.shape, !shape.isEmpty else {
            throw ImportError.malformed(loc(l), reason: "an input layer without batch_input_shape / batch_shape")
        }
        names.reserve(l.name)
        return KValue(name: l.name, shape: shape)
    }

    private func inputDType(_ l: KerasLayer) throws -> DType {
        let name = l.config["dtype"]?.string ?? l.config["dtype"]?["config"]?["name"]?.string ?? "float32"
        switch name {
        case "float32", "float16", "float64", "bfloat16", "mixed_float16", "mixed_bfloat16": return .float32
        case "int32": return .int32
        case "int64": return .int64
        default: throw ImportError.unsupported(loc(l), what: "an input of type \(name)")
        }
    }
}
