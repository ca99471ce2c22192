import Foundation
import ShrinkwrapIR

/// Input and output names MIL could not keep: the exporter records the
/// source's names in the model's user-defined metadata
/// (`MILExporter.originalNamesKey`, JSON {"MIL name": "original name"}), and
/// reading the package back restores them, so that the package compares
/// with its source name for name. The entry is dropped from the metadata.
extension Graph {
    func restoringOriginalNames(file: String) -> Graph {
        guard let k = metadata.properties.firstIndex(where: { $0.key == MILExporter.originalNamesKey }) else { return self }
        var g = self
        let text = metadata.properties[k].value
        g.metadata.properties.remove(at: k)
        // A damaged entry is ignored: the MIL names are valid names too.
        guard let data = text.data(using: .utf8), let map = (try? JSONSerialization.jsonObject(with: data)) as? [String: String] else { return g }
        let io = Set(g.inputs.map(\.name) + g.outputs.map(\.name))
        var taken = Set(g.allNodes.flatMap { $0.inputs + $0.outputs }).union(g.constants.map(\.name)).union(io)
        var renames: [String: String] = [:]
        for (mil, original) in map.sorted(by: { $0.key < $1.key }) where io.contains(mil) && !original.isEmpty && !taken.contains(original) {
            renames[mil] = original
            taken.insert(original)
        }
        guard !renames.isEmpty else { return g }
        func r(_ s: String) -> String { renames[s] ?? s }
        for k in g.inputs.indices { g.inputs[k].name = r(g.inputs[k].name) }
        for k in g.outputs.indices { g.outputs[k].name = r(g.outputs[k].name) }
        for k in g.nodes.indices {
            g.nodes[k].inputs = g.nodes[k].inputs.map(r)
            g.nodes[k].outputs = g.nodes[k].outputs.map(r)
            for (key, sub) in g.nodes[k].subgraphs { g.nodes[k].attributes[key] = .graph(sub.renamingCaptures(renames)) }
        }
        var info: [String: ValueInfo] = [:]
        for (name, v) in g.valueInfo {
            var v = v
            v.name = r(name)
            info[r(name)] = v
        }
        g.valueInfo = info
        for k in g.metadata.imageInputs.indices { g.metadata.imageInputs[k].name = r(g.metadata.imageInputs[k].name) }
        for k in g.metadata.inputNormalization.indices { g.metadata.inputNormalization[k].name = r(g.metadata.inputNormalization[k].name) }
        for k in g.metadata.flexibleShapes.indices { g.metadata.flexibleShapes[k].input = r(g.metadata.flexibleShapes[k].input) }
        return g
    }
}
