import Foundation
import ONNXSchema
import ShrinkwrapIR

// Writing subgraphs (If's branches, Loop's body): each is a GraphProto with
// its own initializers (stored as the main graph's are), its declared inputs
// and outputs, and nodes that read enclosing-graph values by name as ONNX
// allows. One name allocator covers the whole model, so names the writer
// invents collide with none at any depth.
extension ONNXExporter {
    /// A subgraph as a GraphProto.
    static func graphProto(_ graph: Graph, opset: Int, names: inout NameAllocator) throws -> Onnx_GraphProto {
        var weights = ONNXWeightWriter()
        for c in graph.constants { try weights.add(c, names: &names) }
        var g = Onnx_GraphProto()
        g.name = graph.name.isEmpty ? "subgraph" : graph.name
        g.initializer = weights.initializers
        g.node = weights.nodes
        for n in graph.nodes { g.node += try nodes(for: n, opset: opset, names: &names) }
        uniquifyNodeNames(&g.node)
        g.input = graph.inputs.map(valueInfo)
        g.output = graph.outputs.map(valueInfo)
        let listed = Set(graph.inputs.map(\.name) + graph.outputs.map(\.name) + graph.constants.map(\.name))
        let produced = Set(graph.nodes.flatMap(\.outputs))
        for key in graph.valueInfo.keys.sorted() where !listed.contains(key) && produced.contains(key) {
            if let v = graph.valueInfo[key], v.dtype != nil, v.shape != nil { g.valueInfo.append(valueInfo(v)) }
        }
        return g
    }

    /// The lowest opset the weights of every subgraph (at any depth) need.
    static func subgraphWeightOpset(_ graph: Graph) throws -> Int {
        var opset = 0
        for n in graph.nodes {
            for (_, sub) in n.subgraphs {
                var scratch = NameAllocator(reserving: sub)
                var weights = ONNXWeightWriter()
                for c in sub.constants { try weights.add(c, names: &scratch) }
                opset = max(opset, weights.minimumOpset, try subgraphWeightOpset(sub))
            }
        }
        return opset
    }

    /// The node with the data of its subgraphs' initializers taken out, at any depth (for the layout's graph bytes).
    static func blankingSubgraphInitializers(_ node: Onnx_NodeProto) -> Onnx_NodeProto {
        var n = node
        for k in n.attribute.indices where n.attribute[k].hasG {
            for i in n.attribute[k].g.initializer.indices { n.attribute[k].g.initializer[i].rawData = Data() }
            n.attribute[k].g.node = n.attribute[k].g.node.map(blankingSubgraphInitializers)
        }
        return n
    }

    /// Node names must be unique within a graph (onnxruntime refuses a model
    /// otherwise); an importer may give several nodes one source op's name.
    static func uniquifyNodeNames(_ nodes: inout [Onnx_NodeProto]) {
        var seen = Set<String>()
        for i in nodes.indices where !nodes[i].name.isEmpty {
            var name = nodes[i].name, k = 1
            while !seen.insert(name).inserted { k += 1; name = "\(nodes[i].name)_\(k)" }
            nodes[i].name = name
        }
    }
}
