import ShrinkwrapIR
import TensorFlowSchema

/// A TF1 while loop — the frame of Enter / Merge / Switch / LoopCond /
/// NextIteration / Exit ops that TF1's tf.while_loop builds, and that
/// `convert_variables_to_constants_v2` lowers a TF2 While into by default —
/// collapsed into one `_TF1Loop` op, which the importer unrolls like a While
/// (`TFOps.unrollTF1Loop`). The body is the frame's other ops, reading its
/// arguments: one per loop variable (named after its Merge, which is also
/// what the Switch's true output stands for), then one per value entering
/// unchanged (an invariant Enter, or a value from outside the frame).
struct TF1Loop {
    let frame: String
    /// Argument op names: the loop variables' (their Merge's name), then the invariants'.
    var arguments: [String]
    var variables: Int
    /// Element types of the loop variables (their Enter's T).
    var types: [Tensorflow_DataType]
    /// The frame's other ops, reading arguments and each other.
    var body: [TFOp]
    /// The condition (LoopCond's input) and each variable's next value (NextIteration's input).
    var condition: String
    var next: [String]

    static let frameOps: Set<String> = ["Enter", "RefEnter", "Merge", "RefMerge", "Switch", "RefSwitch", "LoopCond", "NextIteration",
                                        "RefNextIteration", "Exit", "RefExit"]

    /// The ops with every frame replaced by its `_TF1Loop` op, the loops by op
    /// name, and each Exit's reference → the loop output it stands for.
    static func collapse(_ ops: [TFOp], resolve: @escaping (String) -> String, file: String) throws
        -> (ops: [TFOp], loops: [String: TF1Loop], exits: [String: String]) {
        let index = FrameIndex(ops: ops, resolve: resolve)
        var frames: [String: [Int]] = [:]
        var order: [String] = []
        for (k, op) in ops.enumerated() where op.op == "Enter" || op.op == "RefEnter" {
            let f = FrameIndex.frameName(op)
            if frames[f] == nil { order.append(f) }
            frames[f, default: []].append(k)
        }
        var removed = Set<Int>()
        var added: [TFOp] = []
        var loops: [String: TF1Loop] = [:]
        var exits: [String: String] = [:]
        var taken = Set(ops.map(\.name))
        for frame in order {
            var name = frame.isEmpty ? "loop" : frame
            while taken.contains(name) { name += "_" }
            taken.insert(name)
            let (loop, op, frameExits, members) = try index.loop(frame, enters: frames[frame] ?? [], name: name, file: file)
            loops[name] = loop
            added.append(op)
            exits.merge(frameExits) { a, _ in a }
            removed.formUnion(members)
        }
        return (ops.indices.filter { !removed.contains($0) }.map { ops[$0] } + added, loops, exits)
    }
}

/// The flattened ops with their producers and readers, for finding frames.
private struct FrameIndex {
    let ops: [TFOp]
    let resolve: (String) -> String
    var byName: [String: Int] = [:]
    var readers: [Int: [Int]] = [:]

    init(ops: [TFOp], resolve: @escaping (String) -> String) {
        self.ops = ops
        self.resolve = resolve
        for (k, op) in ops.enumerated() { byName[op.name] = k }
        for (k, op) in ops.enumerated() {
            for i in op.inputs { if let (p, _) = producer(i) { readers[p, default: []].append(k) } }
        }
    }

    func producer(_ ref: String) -> (Int, Int)? {
        guard let (name, k) = TFFlatGraph.split(resolve(ref)), let i = byName[name] else { return nil }
        return (i, k)
    }

    static func frameName(_ op: TFOp) -> String {
        if case .s(let s)? = op.attrs["frame_name"]?.value { return String(decoding: s, as: UTF8.self) }
        return ""
    }

    func isEnter(_ k: Int) -> Bool { ops[k].op == "Enter" || ops[k].op == "RefEnter" }
    func isExit(_ k: Int) -> Bool { ops[k].op == "Exit" || ops[k].op == "RefExit" }

    /// Everything the frame's Enters reach, up to its Exits.
    func members(of frame: String, enters: [Int], fail: (String) -> ImportError) throws -> Set<Int> {
        var inside = Set(enters)
        var pending = enters
        while let k = pending.popLast() {
            if isExit(k) { continue }
            for r in readers[k] ?? [] where !inside.contains(r) {
                if isEnter(r) && Self.frameName(ops[r]) != frame { throw fail("a loop inside a loop (frame '\(Self.frameName(ops[r]))')") }
                inside.insert(r)
                pending.append(r)
            }
        }
        return inside
    }

    /// The frame's loop, its `_TF1Loop` op (named `name`), its Exits' aliases and its member ops.
    func loop(_ frame: String, enters: [Int], name: String, file: String) throws -> (TF1Loop, TFOp, [String: String], Set<Int>) {
        func fail(_ why: String) -> ImportError {
            .unsupported(SourceLocation(file: file, place: "loop frame '\(frame)'"), what: why)
        }
        let inside = try members(of: frame, enters: enters, fail: fail)
        let members = inside.sorted()
        let conds = members.filter { ops[$0].op == "LoopCond" }
        guard conds.count == 1, let cond = conds.first, let condInput = ops[cond].inputs.first else {
            throw fail("\(conds.count) LoopCond ops (one expected)")
        }
        // Loop variables: Merge(Enter, NextIteration).
        var variables: [(merge: Int, enter: Int, next: Int)] = []
        for m in members where ops[m].op == "Merge" || ops[m].op == "RefMerge" {
            let ins = ops[m].inputs.compactMap { producer($0)?.0 }
            guard ins.count == 2, ops[m].inputs.count == 2, let e = ins.first(where: isEnter),
                  let n = ins.first(where: { ["NextIteration", "RefNextIteration"].contains(ops[$0].op) }) else {
                throw fail("Merge '\(ops[m].name)' does not join an Enter and a NextIteration")
            }
            variables.append((m, e, n))
        }
        let mergeOf = Dictionary(uniqueKeysWithValues: variables.enumerated().map { ($0.element.merge, $0.offset) })
        let variableEnters = Set(variables.map(\.enter))
        let invariantEnters = enters.filter { !variableEnters.contains($0) }
        var arguments = variables.map { ops[$0.merge].name } + invariantEnters.map { ops[$0].name }
        var outer: [String] = variables.map { ops[$0.enter].inputs.first ?? "" } + invariantEnters.map { ops[$0].inputs.first ?? "" }
        guard !outer.contains("") else { throw fail("an Enter without an input") }
        // Switch → its variable.
        var switchOf: [Int: Int] = [:]
        for s in members where ops[s].op == "Switch" || ops[s].op == "RefSwitch" {
            guard ops[s].inputs.count == 2, let (m, _) = producer(ops[s].inputs[0]), let v = mergeOf[m], producer(ops[s].inputs[1])?.0 == cond else {
                throw fail("Switch '\(ops[s].name)' does not split a loop variable on the loop's condition")
            }
            switchOf[s] = v
        }
        var outerArgument: [String: String] = [:]
        // A reference inside the body: loop variables and invariants as arguments, outside values as new invariants.
        func local(_ ref: String, in place: String) throws -> String {
            guard let (p, k) = producer(ref) else { return ref }
            if let v = mergeOf[p] {
                guard k == 0 else { throw fail("\(place) reads a Merge's value_index") }
                return ops[variables[v].merge].name + ":0"
            }
            if let v = switchOf[p] {
                guard k == 1 else { throw fail("\(place) reads a Switch's false output inside the loop") }
                return ops[variables[v].merge].name + ":0"
            }
            if variableEnters.contains(p) { throw fail("\(place) reads a loop variable's Enter past its Merge") }
            if inside.contains(p) {
                guard !TF1Loop.frameOps.contains(ops[p].op) || isEnter(p) else { throw fail("\(place) reads \(ops[p].op) '\(ops[p].name)' inside the loop") }
                return "\(ops[p].name):\(k)"
            }
            let resolved = resolve(ref)
            if let a = outerArgument[resolved] { return a }
            let argument = "\(frame)/outer_\(outerArgument.count)"
            arguments.append(argument)
            outer.append(resolved)
            outerArgument[resolved] = argument + ":0"
            return argument + ":0"
        }
        var body: [TFOp] = []
        for k in members where !TF1Loop.frameOps.contains(ops[k].op) {
            var op = ops[k]
            op.inputs = try op.inputs.map { try local($0, in: "op '\(op.name)'") }
            body.append(op)
        }
        let condition = try local(condInput, in: "the condition")
        let next = try variables.map { v -> String in
            guard let input = ops[v.next].inputs.first else { throw fail("NextIteration '\(ops[v.next].name)' without an input") }
            return try local(input, in: "NextIteration '\(ops[v.next].name)'")
        }
        let types = variables.map { v -> Tensorflow_DataType in
            if case .type(let t)? = ops[v.enter].attrs["T"]?.value { return t }
            return .dtInvalid
        }
        var exits: [String: String] = [:]
        for x in members where isExit(x) {
            guard let input = ops[x].inputs.first, let (s, _) = producer(input), let v = switchOf[s] else {
                throw fail("Exit '\(ops[x].name)' does not leave through a loop variable's Switch")
            }
            exits["\(ops[x].name):0"] = "\(name):\(v)"
        }
        let loop = TF1Loop(frame: frame, arguments: arguments, variables: variables.count, types: types, body: body, condition: condition, next: next)
        return (loop, TFOp(name: name, op: "_TF1Loop", inputs: outer, attrs: [:], place: "loop frame '\(frame)'"), exits, inside)
    }
}
