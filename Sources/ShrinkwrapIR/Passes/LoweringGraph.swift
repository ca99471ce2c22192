/// The graph as lowering passes rewrite it for an exporter: nodes, the static
/// shape and element type of every value, and the constants (the graph's plus
/// the ones the passes make). Built from a prepared graph (every value's shape
/// annotated); exporters write from it.
public struct LoweringGraph: Sendable {
    public var nodes: [Node]
    public var shapes: [String: [Int]]
    public var dtypes: [String: DType]
    public var constants: [String: WeightEncoding]
    public let outputs: Set<String>
    /// Names of values the passes and the writer make: `base__N`.
    public var names: NameAllocator

    public init(_ g: Graph) {
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
        names = NameAllocator(.numbered(separator: "__"), taken: used)
    }

    /// A fresh value or node name.
    public mutating func fresh(_ base: String) -> String { names.fresh(base) }

    /// Adds a constant under a fresh name made from `base`; returns the name.
    public mutating func addConstant(_ base: String, _ e: WeightEncoding) -> String {
        let name = fresh(base)
        constants[name] = e
        shapes[name] = e.shape
        dtypes[name] = e.decodedDType
        return name
    }

    public func isConstant(_ v: String) -> Bool { constants[v] != nil }

    /// The node writing each value, by index.
    public var producers: [String: Int] {
        var p: [String: Int] = [:]
        for (k, n) in nodes.enumerated() { for o in n.outputs where !o.isEmpty { p[o] = k } }
        return p
    }
}

extension WeightEncoding {
    /// The element type the weight decodes to.
    public var decodedDType: DType {
        switch self {
        case .dense(let t): return t.dtype
        default: return .float32
        }
    }
}

extension LoweringPipeline {
    /// Runs the passes on `graph` and returns it rewritten, for exporters that
    /// write from a `Graph`: its nodes replaced, the constants the passes made
    /// added, and every value they made annotated with its shape and type.
    /// A graph the passes leave alone comes back unchanged.
    public func applied(to graph: Graph) throws -> Graph {
        var g = LoweringGraph(graph)
        try run(&g)
        let added = g.constants.keys.filter { !graph.isConstant($0) }.sorted()
        guard g.nodes != graph.nodes || !added.isEmpty else { return graph }
        var out = graph
        out.nodes = g.nodes
        for name in added { if let e = g.constants[name] { out.setConstant(Constant(name: name, encoding: e)) } }
        let known = Set(graph.valueInfo.keys).union(graph.inputs.map(\.name)).union(graph.outputs.map(\.name))
        for n in g.nodes {
            for o in n.outputs where !o.isEmpty && !known.contains(o) {
                out.valueInfo[o] = ValueInfo(name: o, dtype: g.dtypes[o], shape: g.shapes[o].map { $0.map { .fixed($0) } })
            }
        }
        return out
    }
}
