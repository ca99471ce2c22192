// An ONNX-semantics Loop (in ExportPreparation's normal form: constant trip count, no scan
// outputs, statically shaped body) → a NeuralNetwork loop layer (specification 4).
//
// Core ML has no loop-carried values and gives the body no iteration number, so:
//   - every body input that is used (iteration i, condition, carried values) is a state blob of
//     the network, initialised before the loop (i = 0; the rest from the Loop's inputs);
//   - the body network is the lowered ONNX body reading those blobs, then i + 1, then copy
//     layers writing the new condition, carried values and i back to their state blobs;
//   - the loop layer's maxLoopIterations is M, and its condition network (when the condition
//     is not always true) passes the condition blob on: Core ML runs while cond ∧ i < M, as ONNX.
// The iteration number travels as float32: exact for M ≤ 2²⁴, which is checked.
import CoreMLSchema
import ShrinkwrapIR

extension CoreMLLayerWriters {
    static let loop: Writer = { w, n in try w.writeLoop(n) }
}

extension NNWriter {
    /// Largest trip count whose iteration numbers float32 holds exactly.
    static let maxExactTripCount = 1 << 24

    mutating func writeLoop(_ n: Node) throws {
        guard case .graph(let source)? = n.attributes["body"] else { throw LayerWriterError("no body") }
        let carried = Array(n.inputs.dropFirst(2))
        guard n.inputs.count >= 2, source.inputs.count == carried.count + 2, source.outputs.count == carried.count + 1,
              n.outputs.count <= carried.count else {
            throw LayerWriterError("the body must take (i, cond, \(carried.count) carried) and give (cond, \(carried.count) carried), no scan outputs")
        }
        try needND("loop")
        var trip: Int?
        if let m = n.input(0) {
            guard graph.isConstant(m), let v = try intValues(m).first, try intValues(m).count == 1 else {
                throw LayerWriterError("the trip count M must be a one-element constant")
            }
            guard v >= 0, v <= Self.maxExactTripCount else {
                throw LayerWriterError("trip count \(v) outside 0...\(Self.maxExactTripCount) (the iteration number travels as float32)")
            }
            trip = v
        }
        if trip == 0 {
            // No iteration: the results are the initial values.
            for (j, o) in n.outputs.enumerated() where !o.isEmpty { setAlias(o, to: try inputBlob(carried[j])) }
            return
        }
        let body = try bodyGraph(source)
        let reads = Set(body.nodes.flatMap(\.inputs)).union(body.outputs.map(\.name))
        let needsCondition = n.loopNeedsCondition(in: graph, body: body)
        if !needsCondition, trip == nil { throw LayerWriterError("neither a trip count nor a condition: it would never end") }

        // State blobs, initialised before the loop.
        var state: [String?] = Array(repeating: nil, count: body.inputs.count)
        for (k, input) in body.inputs.enumerated() where reads.contains(input.name) || (k == 1 && needsCondition)
            || (k >= 2 && k - 2 < n.outputs.count && !n.outputs[k - 2].isEmpty) {
            let s = freshBlob(input.name)
            state[k] = s
            switch k {
            case 0: try constantBlob(s, value: 0)
            case 1:
                if let c = n.input(1) { try copy(into: s, from: c) } else { try constantBlob(s, value: 1) }
            default: try copy(into: s, from: carried[k - 2])
            }
        }
        var bw = NNWriter(graph: body, rank5: false, isLoopBody: true)
        bw.blobNames = blobNames
        bw.blobNames.reserve(body.allNames)
        bw.layerNames = layerNames
        for c in body.capturedNames { bw.alias[c] = blob(c) }
        for (k, s) in state.enumerated() { if let s { bw.alias[body.inputs[k].name] = s } }
        do {
            try bw.writeLayers()
        } catch ExportError.unsupportedOps(_, let ops) {
            // Listed with the outer graph's unsupported ops.
            throw LayerWriterError("its body has \(ops.joined(separator: ", "))")
        }
        try bw.writeBack(state: state, body: body, needsCondition: needsCondition)
        var l = layer(n.name, inputs: [], outputs: [])
        l.loop.maxLoopIterations = UInt64(trip ?? 0)
        if needsCondition, let condBlob = state[1] {
            let condVar = bw.freshBlob("\(n.outputs.first ?? n.name)_condition")
            var pass = bw.layer("\(n.name)_condition", inputs: [condBlob], outputs: [condVar])
            pass.activation.linear.alpha = 1
            l.loop.conditionVar = condVar
            l.loop.conditionNetwork.layers = [pass]
        }
        l.loop.bodyNetwork.layers = bw.layers
        blobNames = bw.blobNames
        layerNames = bw.layerNames
        require(bw.version, "loop body layers")
        add(l)
        for (j, o) in n.outputs.enumerated() where !o.isEmpty {
            guard let s = state[j + 2] else { throw LayerWriterError("loop output '\(o)' is never read by the body") }
            setAlias(o, to: s)
        }
    }

    /// The body lowered for Core ML, with the shapes of the outer values it reads (and the outer
    /// constants it reads copied in).
    func bodyGraph(_ source: Graph) throws -> Graph {
        var body = source
        for c in source.capturedNames {
            if let k = graph.constant(named: c) { body.setConstant(k); continue }
            guard let info = graph.valueInfo[c] ?? graph.inputs.first(where: { $0.name == c }) else {
                throw LayerWriterError("the body reads '\(c)', which has no known shape")
            }
            body.valueInfo[c] = info
        }
        let outer = graph.definedNames
        if let clash = body.nodes.flatMap(\.outputs).first(where: { !$0.isEmpty && outer.contains($0) }) {
            throw LayerWriterError("body value '\(clash)' has the name of a value outside the loop")
        }
        return try CoreMLLowering.pipeline.applied(to: body)
    }

    /// A one-element constant blob `name` = `value`.
    mutating func constantBlob(_ name: String, value: Float) throws {
        var l = layer("const_\(name)", inputs: [], outputs: [name])
        l.loadConstantNd.shape = [1]
        l.loadConstantNd.data.floatValue = [value]
        add(l)
    }

    /// Blob `name` = value `v` (a copy layer, or the constant written straight into it).
    mutating func copy(into name: String, from v: String) throws {
        if graph.isConstant(v), alias[v] == nil { try emitConstant(v, as: name); return }
        var l = layer("copy_\(name)", inputs: [try inputBlob(v)], outputs: [name])
        l.copy = .init()
        add(l)
    }

    /// The end of the body: i + 1, then copies of the new condition, carried values and i into
    /// their state blobs (values that are themselves state blobs go through a temporary first,
    /// so no copy reads a blob an earlier copy overwrote).
    mutating func writeBack(state: [String?], body: Graph, needsCondition: Bool) throws {
        var pending: [(from: String, to: String)] = []
        if let i = state[0] {
            let next = freshBlob("\(i)_next")
            var inc = layer("\(i)_increment", inputs: [i], outputs: [next])
            inc.activation.linear.alpha = 1
            inc.activation.linear.beta = 1
            add(inc)
            pending.append((next, i))
        }
        let stateBlobs = Set(state.compactMap { $0 })
        for (k, o) in body.outputs.enumerated() {
            guard let target = state[k + 1], k > 0 || needsCondition else { continue }
            var from = try inputBlob(o.name)
            if from == target { continue }
            if stateBlobs.contains(from) {
                let t = freshBlob("\(target)_new")
                var c = layer("copy_\(t)", inputs: [from], outputs: [t])
                c.copy = .init()
                add(c)
                from = t
            }
            pending.append((from, target))
        }
        for (from, to) in pending {
            var c = layer("copy_\(to)", inputs: [from], outputs: [to])
            c.copy = .init()
            add(c)
        }
    }
}
