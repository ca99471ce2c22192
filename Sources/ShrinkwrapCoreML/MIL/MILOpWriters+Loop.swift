// An ONNX-semantics Loop in ExportPreparation's normal form (a constant trip count or none, no
// scan outputs, a statically shaped body: see LoopPreparation) → a MIL while_loop.
//
// MIL runs `while cond(vars): vars = body(vars)` over loop vars whose types never change. The
// Loop's state becomes
//   loop vars:  [i: int32 scalar]   when there is a trip count or the body reads the iteration
//             + [c: bool scalar]    when the condition can stop the loop
//             + the carried values;
//   cond block: i < M, c, or both (logical_and);
//   body block: the lowered ONNX body reading i, c and the carried values, and i + 1; it returns
//               (i + 1, the body's condition, its carried values), each made by an op of the block
//               (an identity otherwise, as coremltools writes them).
// Both blocks name their inputs alike, as coremltools does. Constants the body reads are written
// before the loop (computed once: `MILWeights.write`). MIL counts in int32: trip counts up to
// Int32.max.
import ShrinkwrapIR

extension MILOpWriters {
    static let loop: Writer = { w, n in try w.writeLoop(n) }
}

/// One loop var of a while_loop being written.
private struct LoopVar {
    /// Its value before the loop (outer block).
    var initial: String
    var type: MILTensorType
    /// Its name inside the cond and body blocks.
    var inner: String
}

extension MILWriter {
    mutating func writeLoop(_ n: Node) throws {
        guard case .graph(let source)? = n.attributes["body"] else { throw MILWriterError("no body") }
        let carried = Array(n.inputs.dropFirst(2))
        guard n.inputs.count >= 2, source.inputs.count == carried.count + 2, source.outputs.count == carried.count + 1,
              n.outputs.count <= carried.count else {
            throw MILWriterError("the body must take (i, cond, \(carried.count) carried) and give (cond, \(carried.count) carried), no scan outputs")
        }
        var trip: Int?
        if let m = n.input(0) {
            guard let v = constInts(m), v.count == 1 else { throw MILWriterError("the trip count M must be a one-element constant") }
            guard v[0] >= 0, v[0] <= Int(Int32.max) else { throw MILWriterError("trip count \(v[0]) outside 0...\(Int32.max) (MIL counts in int32)") }
            trip = v[0]
        }
        if trip == 0 {
            // No iteration: the results are the initial values.
            for (j, o) in n.outputs.enumerated() where !o.isEmpty { names[o] = try value(carried[j]) }
            return
        }
        let body = try loweredBody(source)
        let needsCondition = n.loopNeedsCondition(in: graph, body: body)
        if !needsCondition, trip == nil { throw MILWriterError("neither a trip count nor a condition: it would never end") }
        let iteration = body.inputs[0].name
        let counts = trip != nil || body.nodes.contains { $0.inputs.contains(iteration) } || body.outputs.contains { $0.name == iteration }
        let base = n.outputs.first { !$0.isEmpty } ?? n.name

        // The loop vars and their values before the loop.
        var sub = MILWriter(graph: body, target: target, precision: precision)
        var vars: [LoopVar] = []
        if counts {
            let t = MILTensorType(dataType: .int32, shape: [])
            vars.append(LoopVar(initial: builder.int32(base + "_iteration_initial", 0), type: t, inner: builder.fresh(base + "_iteration_x")))
        }
        if needsCondition {
            let t = MILTensorType(dataType: .bool, shape: [])
            let initial = try n.input(1).map { try reshapedIfNeeded(try value($0), to: [], base: base + "_condition_initial") }
                ?? builder.bool(base + "_condition_initial", true)
            vars.append(LoopVar(initial: initial, type: t, inner: builder.fresh(base + "_condition_x")))
        }
        for (k, v) in carried.enumerated() {
            let t = try sub.computeType(body.inputs[k + 2].name)
            let initial = try matching(try value(v), t, base: "\(base)_carried\(k)_initial")
            vars.append(LoopVar(initial: initial, type: t, inner: builder.fresh(body.inputs[k + 2].name)))
        }
        for v in vars { builder.declare(v.inner, v.type) }
        let blockInputs = vars.map { ($0.inner, $0.type) }

        // cond block: i < M, c, or both.
        builder.beginBlock()
        var tests: [String] = []
        if let trip, counts {
            let m = builder.int32(base + "_trip_count", trip)
            tests.append(builder.op1("less", [("x", .value(vars[0].inner)), ("y", .value(m))], output: builder.fresh(base + "_below_trip_count"),
                                     MILTensorType(dataType: .bool, shape: [])))
        }
        if needsCondition { tests.append(vars[counts ? 1 : 0].inner) }
        let keepGoing = tests.count == 2
            ? builder.op1("logical_and", [("x", .value(tests[1])), ("y", .value(tests[0]))], output: builder.fresh(base + "_continue"),
                          MILTensorType(dataType: .bool, shape: []))
            : builder.op1("identity", [("x", .value(tests[0]))], output: builder.fresh(base + "_continue"), MILTensorType(dataType: .bool, shape: []))
        let condBlock = builder.endBlock(inputs: blockInputs, outputs: [keepGoing])

        // body block.
        for c in body.capturedNames { sub.names[c] = try value(c) }
        for c in body.constants where names[c.name] != nil && graph.constant(named: c.name) == c { sub.names[c.name] = names[c.name] }
        builder.beginBlock()
        sub.builder = builder
        builder = MILProgramBuilder()
        let results: [String]
        do {
            results = try sub.writeBody(body, vars: vars, counts: counts, needsCondition: needsCondition, base: base)
        } catch {
            builder = sub.builder
            _ = builder.endBlock(inputs: [], outputs: [])
            throw error
        }
        builder = sub.builder
        let bodyBlock = builder.endBlock(inputs: blockInputs, outputs: results)
        // Constants the body wrote before the loop serve the outer graph too.
        for c in body.constants where names[c.name] == nil && sub.names[c.name] != nil && graph.constant(named: c.name) == c {
            names[c.name] = sub.names[c.name]
        }

        // The while_loop: its outputs are the final loop vars.
        let first = vars.count - carried.count
        var outputs: [(String, MILTensorType)] = []
        for (k, v) in vars.enumerated() {
            let j = k - first
            if j >= 0, j < n.outputs.count, !n.outputs[j].isEmpty, (try? computeType(n.outputs[j])) == v.type {
                outputs.append((define(n.outputs[j]), v.type))
            } else {
                outputs.append((builder.fresh("\(base)_final\(k)"), v.type))
            }
        }
        let made = builder.op("while_loop", [("loop_vars", .values(vars.map(\.initial)))], outputs: outputs,
                              blocks: [condBlock, bodyBlock], name: builder.fresh(n.name.isEmpty ? base + "_loop" : n.name))
        for (j, o) in n.outputs.enumerated() where !o.isEmpty && names[o] == nil { names[o] = made[first + j] }
    }

    /// The body lowered for MIL, with the shapes of the outer values it reads.
    func loweredBody(_ source: Graph) throws -> Graph {
        var body = source
        for c in source.capturedNames where !graph.isConstant(c) {
            guard let info = graph.valueInfo[c] ?? graph.inputs.first(where: { $0.name == c }) else {
                throw MILWriterError("the body reads '\(c)', which has no known shape")
            }
            body.valueInfo[c] = info
        }
        return try MILLowering.pipeline.applied(to: body)
    }

    /// Writes the body's nodes (this writer's graph is the body) into the
    /// block begun for it; returns the block's outputs, one per loop var.
    fileprivate mutating func writeBody(_ body: Graph, vars: [LoopVar], counts: Bool, needsCondition: Bool, base: String) throws -> [String] {
        var k = 0
        var next: String?
        if counts {
            let i = vars[0].inner
            names[body.inputs[0].name] = try reshapedIfNeeded(i, to: try shape(body.inputs[0].name), base: base + "_iteration")
            let one = builder.int32(base + "_one", 1)
            next = builder.op1("add", [("x", .value(i)), ("y", .value(one))], output: builder.fresh(base + "_iteration_next"), vars[0].type)
            k += 1
        }
        let condShape = try shape(body.inputs[1].name)
        if needsCondition {
            names[body.inputs[1].name] = try reshapedIfNeeded(vars[k].inner, to: condShape, base: base + "_condition")
            k += 1
        } else {
            names[body.inputs[1].name] = builder.const(base + "_condition", .bools(Array(repeating: true, count: condShape.reduce(1, *)), shape: condShape))
        }
        for (j, v) in vars[k...].enumerated() { names[body.inputs[j + 2].name] = v.inner }

        let unsupported = try writeNodes()
        if !unsupported.isEmpty { throw MILWriterError("its body has \(unsupported.joined(separator: ", "))") }

        var results: [String] = []
        if let next { results.append(next) }
        if needsCondition { results.append(try reshapedIfNeeded(try value(body.outputs[0].name), to: [], base: base + "_condition_next")) }
        for (j, o) in body.outputs.dropFirst().enumerated() {
            results.append(try matching(try value(o.name), vars[k + j].type, base: "\(base)_carried\(j)_next"))
        }
        // Each output made by an op of this block, once.
        let made = Set(builder.operations.flatMap { $0.outputs.map(\.name) })
        for (j, r) in results.enumerated() where !made.contains(r) {
            results[j] = builder.op1("identity", [("x", .value(r))], output: builder.fresh(r + "_next"), vars[j].type)
        }
        var seen = Set<String>()
        for (j, r) in results.enumerated() {
            if !seen.insert(r).inserted {
                results[j] = builder.op1("identity", [("x", .value(r))], output: builder.fresh(r + "_copy"), vars[j].type)
            }
        }
        return results
    }

    /// `v` as type `t`: the same, reshaped (same element count) or cast (another element type).
    mutating func matching(_ v: String, _ t: MILTensorType, base: String) throws -> String {
        var out = v
        let have = try type(of: v)
        if have.shape != t.shape { out = try reshapedIfNeeded(out, to: t.shape, base: base) }
        if have.dataType != t.dataType { out = cast(out, to: t.dataType, base: base) }
        return out
    }

    /// `reshape(v, shape)` unless `v` has that shape already (the element counts must agree).
    mutating func reshapedIfNeeded(_ v: String, to shape: [Int], base: String) throws -> String {
        let have = try type(of: v)
        if have.shape == shape { return v }
        guard have.shape.reduce(1, *) == shape.reduce(1, *) else {
            throw MILWriterError("'\(v)' of shape \(have.shape) cannot be a loop value of shape \(shape)")
        }
        return try reshaped(v, to: shape, base: base)
    }
}
