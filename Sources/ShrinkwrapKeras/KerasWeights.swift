import HDF5
import ShrinkwrapIR

/// A model's saved weights, found per layer in Keras' own order
/// (Dense: kernel, bias; BatchNormalization: gamma, beta, moving mean, moving variance; …).
///
/// - Keras 2 `.h5`: `model_weights/<layer>` lists its datasets in the attribute
///   `weight_names` ("dense/kernel:0", …). A nested model's group lists every
///   inner weight, each under its inner layer's name ("dense_3/kernel:0").
/// - Keras 3 `model.weights.h5`: `layers/<key>/vars/0, 1, …`, where the key is a
///   name Keras makes from the class ("dense", "dense_1") and `vars` has the
///   layer's own name as attribute `name`; a nested model's layers are under
///   `layers/<key>/layers/…`, a recurrent layer's under `…/cell/vars`, a
///   wrapper's under `…/layer`, `…/forward_layer`, `…/backward_layer`.
struct KerasWeights {
    enum Layout: Sendable { case keras2(root: String), keras3 }

    let h5: HDF5File
    let layout: Layout
    let file: String

    /// The weights of `layer` inside the nested models `scope` (outermost first), in Keras order.
    func tensors(for layer: KerasLayer, scope: [KerasScope]) throws -> [Tensor] {
        switch layout {
        case .keras2(let root): return try keras2(layer, scope: scope, root: root)
        case .keras3: return try keras3(layer, scope: scope)
        }
    }

    private func loc(_ layer: KerasLayer, _ path: String) -> SourceLocation {
        SourceLocation(file: file, place: "\(layer.label), weights '\(path)'")
    }

    private func readTensor(_ path: String, layer: KerasLayer) throws -> Tensor {
        let object: HDF5Object
        do { object = try h5.object(at: path) } catch let e as HDF5Error {
            throw ImportError.malformed(loc(layer, path), reason: "\(e)")
        }
        guard case .dataset(let d) = object else { throw ImportError.malformed(loc(layer, path), reason: "a group where a weight was expected") }
        let value: HDF5Value
        do { value = try d.read() } catch let e as HDF5Error { throw ImportError.malformed(loc(layer, path), reason: "\(e)") }
        guard let count = checkedElementCount(d.shape) else { throw ImportError.badTensor(loc(layer, path), reason: "shape \(d.shape) is too large") }
        let floats: [Float]
        switch value {
        case .floats(let f): floats = f
        case .doubles(let v): floats = v.map { Float($0) }
        default: throw ImportError.unsupported(loc(layer, path), what: "a weight that is not floating point (\(d.type))")
        }
        guard floats.count == count else {
            throw ImportError.badTensor(loc(layer, path), reason: "\(floats.count) values for shape \(d.shape)")
        }
        return Tensor(floats, shape: d.shape)
    }

    // MARK: - Keras 2

    private func keras2(_ layer: KerasLayer, scope: [KerasScope], root: String) throws -> [Tensor] {
        let prefix = root.isEmpty ? "" : root + "/"
        let groupPath = prefix + (scope.first?.name ?? layer.name)
        guard case .group(let g)? = try? h5.object(at: groupPath) else {
            throw ImportError.malformed(loc(layer, groupPath), reason: "the weights file has no group for this layer")
        }
        let names: [String]
        do {
            guard let a = try g.attribute("weight_names") else { return [] }
            switch a.value {
            case .strings(let s): names = s
            case .floats, .doubles: names = []  // h5py writes an empty list as an empty float array
            default: throw ImportError.malformed(loc(layer, groupPath), reason: "weight_names is not a list of strings")
            }
        } catch let e as HDF5Error { throw ImportError.malformed(loc(layer, groupPath), reason: "\(e)") }
        let mine = scope.isEmpty ? names : names.filter { $0.hasPrefix(layer.name + "/") }
        return try mine.map { try readTensor(groupPath + "/" + $0, layer: layer) }
    }

    // MARK: - Keras 3

    private func keras3(_ layer: KerasLayer, scope: [KerasScope]) throws -> [Tensor] {
        let parent = scope.map { $0.key ?? $0.name }.reduce("") { $0 + "layers/" + $1 + "/" }
        let key = try keras3Key(layer, parent: parent, scope: scope)
        var out: [Tensor] = []
        try collectVars(parent + "layers/" + key, layer: layer, depth: 0, into: &out)
        return out
    }

    /// The group of `layer` under `parent + "layers/"`: the one whose `vars` carries the layer's name.
    func keras3Key(_ layer: KerasLayer, parent: String, scope: [KerasScope]) throws -> String {
        let base = parent + "layers"
        guard case .group(let g)? = try? h5.object(at: base) else {
            throw ImportError.malformed(loc(layer, base), reason: "the weights file has no group '\(base)'")
        }
        let members: [String]
        do { members = try g.members() } catch let e as HDF5Error { throw ImportError.malformed(loc(layer, base), reason: "\(e)") }
        for m in members {
            guard case .group(let vars)? = try? h5.object(at: "\(base)/\(m)/vars"),
                  let a = try? vars.attribute("name"), case .strings(let s) = a.value, s.first == layer.name else { continue }
            return m
        }
        // Files without the name attribute: the key Keras makes from the class name.
        if let key = scope.last?.keys[layer.name] ?? KerasScope.generatedKeys(scope.last?.layers ?? [])[layer.name], members.contains(key) {
            return key
        }
        throw ImportError.malformed(loc(layer, base), reason: "no weights group names this layer")
    }

    /// `path/vars/0, 1, …`, then the sub-objects a layer keeps its weights in, in Keras' order.
    private func collectVars(_ path: String, layer: KerasLayer, depth: Int, into out: inout [Tensor]) throws {
        guard depth < 8 else { throw ImportError.malformed(loc(layer, path), reason: "weights nested deeper than 8") }
        if case .group(let vars)? = try? h5.object(at: path + "/vars") {
            let members: [String]
            do { members = try vars.members() } catch let e as HDF5Error { throw ImportError.malformed(loc(layer, path), reason: "\(e)") }
            let numbered = members.compactMap { m in Int(m).map { ($0, m) } }.sorted { $0.0 < $1.0 }
            for (i, (n, m)) in numbered.enumerated() {
                guard n == i else { throw ImportError.malformed(loc(layer, path + "/vars"), reason: "variables are not numbered 0, 1, 2, …") }
                out.append(try readTensor(path + "/vars/" + m, layer: layer))
            }
        }
        for child in ["cell", "forward_layer", "backward_layer", "layer"] {
            if case .group? = try? h5.object(at: path + "/" + child) {
                try collectVars(path + "/" + child, layer: layer, depth: depth + 1, into: &out)
            }
        }
    }
}

/// A nested model being translated: its layer's name and, in Keras 3 files, its weights key.
struct KerasScope: Sendable {
    var name: String
    var key: String?
    var layers: [KerasLayer]
    var keys: [String: String] = [:]

    /// The keys Keras 3 gives layers without a name attribute: the class name in snake case, "_1", "_2", … for repeats.
    static func generatedKeys(_ layers: [KerasLayer]) -> [String: String] {
        var used: [String: Int] = [:]
        var out: [String: String] = [:]
        for l in layers {
            let snake = snakeCase(l.className)
            let n = used[snake, default: 0]
            used[snake] = n + 1
            out[l.name] = n == 0 ? snake : "\(snake)_\(n)"
        }
        return out
    }

    /// Keras' `to_snake_case`: "_" before an uppercase letter that starts a lowercase run
    /// (not at the start), and between a lowercase letter and an uppercase one; then lowercased.
    static func snakeCase(_ name: String) -> String {
        let c = Array(name)
        var out = ""
        for (i, ch) in c.enumerated() {
            if i > 0, ch.isUppercase {
                let startsWord = i + 1 < c.count && c[i + 1].isLowercase
                let afterLower = c[i - 1].isLowercase
                if startsWord || afterLower { out += "_" }
            }
            out += ch.lowercased()
        }
        return out
    }
}
