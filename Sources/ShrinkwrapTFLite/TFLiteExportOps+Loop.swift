import FlatBuffers
import ShrinkwrapIR

/// Loop (ONNX semantics, in the normal form `ExportPreparation` keeps: no scan outputs, M a constant or
/// absent, every body value annotated) → WHILE over the loop variables (i, cond, carried…, captures…):
///
/// - cond subgraph: LESS(i, M) AND cond (just cond without M);
/// - body subgraph: the ONNX body, lowered by `TFLiteLowering` as a graph of its own, reading i as its
///   iteration number and cond as its condition input; it gives (i + 1, its condition, its carried values,
///   the captures unchanged). TFLite subgraphs read only their inputs and constants, so the outer runtime
///   values the body reads ride along as loop variables; outer constants it reads become its own.
///
/// The counter i is int64, the type of the ONNX body's iteration input (TFLite's ADD and LESS take int64),
/// so the body reads it with no CAST.
extension TFLiteExportOps {
    static func loop(_ e: inout TFLiteEmitter, _ n: Node) throws {
        guard case .graph(let body)? = n.attributes["body"] else { throw TFLiteOpError("no body subgraph") }
        let carried = Array(n.inputs.dropFirst(2))
        guard n.inputs.count >= 2, body.inputs.count == carried.count + 2, body.outputs.count == carried.count + 1 else {
            throw TFLiteOpError("the body has \(body.inputs.count) inputs and \(body.outputs.count) outputs for \(carried.count) carried values (scan outputs are not written)")
        }
        guard let iterShape = body.inputs[0].staticShape, let condShape = body.inputs[1].staticShape,
              iterShape.reduce(1, *) == 1, condShape.reduce(1, *) == 1 else {
            throw TFLiteOpError("the body's iteration and condition inputs need one-element static shapes")
        }
        let trip: [Int]? = try n.input(0).map { try constInts(e, $0, "trip count M") }
        if let trip, trip.count != 1 { throw TFLiteOpError("trip count M has \(trip.count) values") }
        // Outer values the body reads: constants move into the body, runtime values become loop variables.
        let captures = body.capturedNames.filter { !e.g.isConstant(e.resolve($0)) }

        var vars: [Int] = [e.file.addTensor(e.g.fresh("while_i0"), shape: iterShape, type: 4, data: .littleEndian([Int64(0)]))]
        if let c = n.input(1) {
            vars.append(try e.conformed(try e.input(c), to: condShape))
        } else {
            vars.append(e.file.addTensor(e.g.fresh("while_cond0"), shape: condShape, type: 6, data: [1]))
        }
        for (k, v) in carried.enumerated() {
            guard let s = body.inputs[k + 2].staticShape else { throw TFLiteOpError("carried value \(k) has no static shape") }
            vars.append(try e.conformed(try e.input(v), to: s))
        }
        for c in captures { vars.append(try e.input(c)) }

        let condIndex = try whileCondition(&e, vars: vars, trip: trip?.first)
        let bodyIndex = try whileBody(&e, body, vars: vars, captures: captures, name: n.label)
        var outs: [Int] = []
        for (k, v) in vars.enumerated() {
            let c = k - 2
            if c >= 0, c < carried.count, c < n.outputs.count, !n.outputs[c].isEmpty {
                outs.append(try e.output(n, c))
            } else {
                let t = e.file.tensors[v]
                outs.append(e.file.addTensor(e.g.fresh(n.label + "_var\(k)"), shape: t.shape, type: t.type))
            }
        }
        try e.op("WHILE", vars, outs, options: "WhileOptions") { b in
            b.table { t in
                t.add(0, Int32(condIndex), default: 0)
                t.add(1, Int32(bodyIndex), default: 0)
            }
        }
    }

    /// The cond subgraph: (i, cond, …) → LESS(i, M) AND cond, or cond without M.
    static func whileCondition(_ e: inout TFLiteEmitter, vars: [Int], trip: Int?) throws -> Int {
        var c = TFLiteEmitter(graph: LoweringGraph(Graph()), source: Graph())
        c.file = e.file.subgraphBuilder()
        c.file.inputs = vars.enumerated().map { k, v in
            let t = e.file.tensors[v]
            return c.file.addTensor("var\(k)", shape: t.shape, type: t.type)
        }
        let i = c.file.inputs[0], cond = c.file.inputs[1]
        if let trip {
            let shape = e.file.tensors[vars[0]].shape
            let m = c.file.addTensor("trip_count", shape: shape, type: 4, data: .littleEndian([Int64(trip)]))
            let less = c.file.addTensor("below_trip_count", shape: shape, type: 6)
            try c.op("LESS", [i, m], [less], options: "LessOptions")
            let both = c.file.addTensor("keep_going", shape: shape, type: 6)
            try c.op("LOGICAL_AND", [less, cond], [both], options: "LogicalAndOptions")
            c.file.outputs = [both]
        } else {
            c.file.outputs = [cond]
        }
        return e.file.finishSubgraph(c.file, name: "while_cond")
    }

    /// The body subgraph: the ONNX body lowered and written, i + 1 and the captures passed on.
    static func whileBody(_ e: inout TFLiteEmitter, _ body: Graph, vars: [Int], captures: [String], name: String) throws -> Int {
        var bg = LoweringGraph(body)
        for c in body.capturedNames {
            let r = e.resolve(c)
            if let k = e.g.constants[r] {
                bg.constants[c] = k
                bg.shapes[c] = k.shape
                bg.dtypes[c] = k.decodedDType
            } else {
                bg.shapes[c] = try e.shape(c)
                bg.dtypes[c] = e.dtype(c)
            }
        }
        try TFLiteLowering.pipeline.run(&bg)
        var b = TFLiteEmitter(graph: bg, source: body)
        b.file = e.file.subgraphBuilder()
        for i in body.inputs { b.file.inputs.append(try b.valueTensor(i.name)) }
        for c in captures { b.file.inputs.append(try b.valueTensor(c)) }
        try b.emitNodes()
        let i = b.file.inputs[0]
        let one = b.file.addTensor(b.g.fresh("one"), shape: [], type: 4, data: .littleEndian([Int64(1)]))
        let next = b.file.addTensor(b.g.fresh("next_iteration"), shape: b.file.tensors[i].shape, type: 4)
        try b.op("ADD", [i, one], [next], options: "AddOptions")
        let results = try b.outputTensors(body.outputs.map(\.name))
        b.file.outputs = [next] + results + b.file.inputs.suffix(captures.count)
        guard b.file.outputs.count == vars.count else { throw TFLiteOpError("the body gives \(b.file.outputs.count) values for \(vars.count) loop variables") }
        return e.file.finishSubgraph(b.file, name: name.isEmpty ? "while_body" : name + "_body")
    }
}

extension TFLiteEmitter {
    /// Tensor `x` with shape `shape` (same element count): itself, or a RESHAPE of it.
    mutating func conformed(_ x: Int, to shape: [Int]) throws -> Int {
        let t = file.tensors[x]
        if t.shape == shape { return x }
        let y = file.addTensor(g.fresh(t.name + "_as_loop_var"), shape: shape, type: t.type)
        try reshape(x, to: shape, into: y)
        return y
    }
}
