// A NeuralNetwork loop layer → an IR Loop (ONNX semantics).
//
// Core ML's loop runs `while cond ∧ i < max: body; cond = conditionNetwork()`, the networks
// reading the enclosing network's blobs by name. Read as ONNX:
//   - the carried values are the enclosing blobs the body's copy layers write (in order of
//     their first copy); the other enclosing blobs the body reads are captures;
//   - M is the layer's input (cast to int64), or maxLoopIterations (none for a while loop:
//     a condition network and maxLoopIterations 0);
//   - the condition network runs once before the loop (the initial condition) and again at
//     the end of the ONNX body (the body's condition output).
// Blobs the body defines are not read after the loop (only the carried ones are).
import CoreMLSchema
import ShrinkwrapIR

extension CoreMLLayerReaders {
    static let loop: Reader = { b, l, p in try b.readLoop(l, place: p) }
}

extension GraphBuilderState {
    mutating func readLoop(_ l: CoreML_Specification_NeuralNetworkLayer, place p: String) throws {
        let q = l.loop
        guard l.output.isEmpty, l.input.count <= 1 else {
            throw ImportError.malformed(loc(p), reason: "a loop layer has no outputs and at most one input (the trip count)")
        }
        guard q.hasBodyNetwork else { throw ImportError.malformed(loc(p), reason: "the loop has no body network") }
        guard q.conditionVar.isEmpty != q.hasConditionNetwork else {
            throw ImportError.malformed(loc(p), reason: "conditionVar and conditionNetwork must be given together")
        }
        for inner in q.bodyNetwork.layers + q.conditionNetwork.layers {
            switch inner.layer {
            case .loop?: throw LayerReaderError("a loop inside a loop")
            case .copy? where q.conditionNetwork.layers.contains(inner) && blobs[inner.output.first ?? ""] != nil:
                throw LayerReaderError("the condition network copies into '\(inner.output.first ?? "")'")
            default: break
            }
        }
        let carried = carriedBlobs(q.bodyNetwork.layers)
        let initial = try carried.map { try value($0, place: "\(p) carried '\($0.escapingControlCharacters)'") }
        let trip = try tripCount(l, place: p)
        var condInit = ""
        if q.hasConditionNetwork {
            try readLayers(q.conditionNetwork.layers, place: "\(p).conditionNetwork")
            condInit = try condition(q.conditionVar, l.name, place: "\(p).conditionNetwork")
        }
        let body = try loopBody(l, carried: carried, initial: initial, place: p)
        var outputs: [String] = []
        for c in carried { outputs.append(try define(c, place: p)) }
        node("Loop", l.name, [trip, condInit] + initial, outputs, ["body": .graph(body)], rank: nil)
        for (o, v) in zip(outputs, initial) { ranks[o] = ranks[v] }
    }

    /// Enclosing blobs the body's copy layers write, in order of their first copy (a blob the body
    /// itself defined first is the body's own).
    func carriedBlobs(_ layers: [CoreML_Specification_NeuralNetworkLayer]) -> [String] {
        var carried: [String] = [], own = Set<String>()
        for layer in layers {
            if case .copy? = layer.layer, let o = layer.output.first, blobs[o] != nil, !own.contains(o) {
                if !carried.contains(o) { carried.append(o) }
            } else {
                own.formUnion(layer.output)
            }
        }
        return carried
    }

    /// The ONNX trip count: the layer's input as int64, maxLoopIterations, or none (a while loop).
    mutating func tripCount(_ l: CoreML_Specification_NeuralNetworkLayer, place p: String) throws -> String {
        if let m = l.input.first {
            let v = try value(m, place: p)
            return node("Cast", "\(l.name)_trip_count", [v], [temp("\(l.name)_trip_count")], ["to": .int(7)], rank: ranks[v])
        }
        if l.loop.hasConditionNetwork, l.loop.maxLoopIterations == 0 { return "" }
        guard l.loop.maxLoopIterations <= UInt64(Int64.max) else {
            throw ImportError.malformed(loc(p), reason: "maxLoopIterations \(l.loop.maxLoopIterations)")
        }
        return constant("\(l.name)_max_iterations", .dense(Tensor(ints: [Int64(l.loop.maxLoopIterations)], shape: [])))
    }

    /// Blob `conditionVar` as a bool value (non-zero is true).
    mutating func condition(_ conditionVar: String, _ name: String, place: String) throws -> String {
        let v = try value(conditionVar, place: place)
        return node("Cast", "\(name)_condition", [v], [temp("\(name)_condition")], ["to": .int(9)], rank: ranks[v])
    }

    /// The ONNX body: inputs (i, cond, carried…), the body network's layers then the condition
    /// network's, outputs (cond, carried…), each output a value of its own.
    mutating func loopBody(_ l: CoreML_Specification_NeuralNetworkLayer, carried: [String], initial: [String], place p: String) throws -> Graph {
        var sub = GraphBuilderState(file: file)
        sub.rank5 = rank5
        sub.blobs = blobs
        sub.ranks = ranks
        sub.usedNames = usedNames
        let iteration = sub.fresh("\(l.name)_iteration"), condIn = sub.fresh("\(l.name)_cond_in")
        var inputs = [ValueInfo(name: iteration, dtype: .int64, shape: []), ValueInfo(name: condIn, dtype: .bool, shape: [])]
        for (c, v) in zip(carried, initial) {
            let formal = sub.fresh("\(c)_in")
            sub.blobs[c] = formal
            sub.ranks[formal] = ranks[v]
            inputs.append(ValueInfo(name: formal, dtype: nil, shape: nil))
        }
        sub.graph.inputs = inputs
        try sub.readLayers(l.loop.bodyNetwork.layers, place: "\(p).bodyNetwork")
        var condOut = condIn
        if l.loop.hasConditionNetwork {
            try sub.readLayers(l.loop.conditionNetwork.layers, place: "\(p).conditionNetwork")
            condOut = try sub.condition(l.loop.conditionVar, "\(l.name)_next", place: "\(p).conditionNetwork")
        }
        var results = [condOut]
        for c in carried { results.append(try sub.value(c, place: "\(p).bodyNetwork")) }
        // Every body output is a value the body makes, once (not an input, capture or constant).
        let made = Set(sub.graph.nodes.flatMap(\.outputs))
        var seen = Set<String>()
        for k in results.indices {
            let v = results[k]
            if !made.contains(v) || seen.contains(v) {
                results[k] = sub.node("Identity", "\(l.name)_result\(k)", [v], [sub.temp("\(v)_result")], rank: sub.ranks[v])
            }
            seen.insert(results[k])
        }
        sub.graph.outputs = results.enumerated().map { k, v in ValueInfo(name: v, dtype: k == 0 ? .bool : nil, shape: nil) }
        usedNames = sub.usedNames
        return sub.graph
    }
}
