import ShrinkwrapIR
import Dispatch

/// Executes a graph in float32 (integers for shape arithmetic).
///
/// Construction checks the graph (order, undefined values), checks that
/// every op has a kernel (listing all that do not), and decodes every
/// constant once through `WeightEncoding.decoded()`.
public final class Interpreter: @unchecked Sendable {
    public struct Options: Sendable {
        /// Threads kernels may use; default: all cores.
        public var threads: Int
        /// Load-time rewrites that change rounding slightly but not meaning
        /// (see `ExecutionPlanner`); off keeps every intermediate value of the
        /// graph as imported. Constant folding always happens.
        public var optimize: Bool
        public init(threads: Int? = nil, optimize: Bool = true) {
            self.threads = max(1, threads ?? Interpreter.defaultThreads)
            self.optimize = optimize
        }
    }

    public static var defaultThreads: Int {
        #if canImport(Darwin) || canImport(Glibc)
        return max(1, sysconfCores())
        #else
        return 1
        #endif
    }

    public let graph: Graph
    public let options: Options

    /// A class, so that walking the steps retains one reference per node, not every field.
    private final class Step {
        let node: NodeRef
        let kernel: Kernel
        let inputSlots: [Int]   // -1 for an omitted input
        let outputSlots: [Int]  // -1 for an omitted output
        let freeAfter: [Int]    // slots whose last reader is this step
        init(node: Node, kernel: @escaping Kernel, inputSlots: [Int], outputSlots: [Int], freeAfter: [Int]) {
            self.node = NodeRef(node); self.kernel = kernel
            self.inputSlots = inputSlots; self.outputSlots = outputSlots; self.freeAfter = freeAfter
        }
    }

    private var slotOf: [String: Int] = [:]
    private var slotNames: [String] = []
    /// The constants by slot, nil elsewhere. A run reads them from here, not from a copy: copying
    /// them into each run's values would retain and release every weight of a loop body per iteration.
    private var constantSlots: [Tensor?] = []
    private var steps: [Step] = []
    private var inputSlots: [(ValueInfo, Int)] = []
    private var outputSlots: [(String, Int)] = []

    public init(graph: Graph, options: Options = Options()) throws {
        Allocator.keepFreedMemory
        let validated = try graph.validatedAndSorted()
        self.graph = validated
        self.options = options

        let missing = Set(validated.allNodes.map(\.opType).filter { KernelRegistry.kernels[$0] == nil }).sorted()
        if !missing.isEmpty {
            throw KernelError.noKernel(op: missing.joined(separator: ", "))
        }
        var planner = ExecutionPlanner(graph: validated, threads: options.threads)
        try planner.run(optimize: options.optimize)
        let g = planner.graph

        func slot(_ name: String) -> Int {
            if let s = slotOf[name] { return s }
            let s = slotNames.count
            slotOf[name] = s
            slotNames.append(name)
            return s
        }
        var constantValues: [Int: Tensor] = [:]
        for c in g.constants { constantValues[slot(c.name)] = c.encoding.decoded() }
        for i in g.runtimeInputs { inputSlots.append((i, slot(i.name))) }
        var lastUse: [Int: Int] = [:]
        var built: [(Node, [Int], [Int])] = []
        for (si, n) in g.nodes.enumerated() {
            // A node with subgraphs also reads what they capture (after its own inputs).
            let ins = (n.inputs + n.capturedNames).map { $0.isEmpty ? -1 : slot($0) }
            let outs = n.outputs.map { $0.isEmpty ? -1 : slot($0) }
            for s in ins where s >= 0 { lastUse[s] = si }
            built.append((n, ins, outs))
        }
        let keep = Set(g.outputs.map { slot($0.name) })
        outputSlots = g.outputs.map { ($0.name, slot($0.name)) }
        var freeAt = [[Int]](repeating: [], count: built.count)
        for (s, si) in lastUse.sorted(by: { $0.key < $1.key }) where !keep.contains(s) && constantValues[s] == nil {
            freeAt[si].append(s)
        }
        for (si, (n, ins, outs)) in built.enumerated() {
            guard let k = n.hasSubgraphs ? try ControlFlow.kernel(for: n, options: options, outer: g)
                : KernelRegistry.kernels[n.opType] ?? ExecutionPlanner.internalKernels[n.opType]
            else { throw KernelError.noKernel(op: n.opType) }
            steps.append(Step(node: n, kernel: k, inputSlots: ins, outputSlots: outs, freeAfter: freeAt[si]))
        }
        var byslot = [Tensor?](repeating: nil, count: slotNames.count)
        for (s, t) in constantValues { byslot[s] = t }
        constantSlots = byslot
    }

    /// Runs the graph. `inputs` maps every runtime input name to a tensor.
    /// With `observe`, every node's outputs are handed over as they are made
    /// (for per-layer reports); intermediate values are otherwise freed early.
    /// With `intoSubgraphs`, the nodes that If / Loop bodies run are observed
    /// too, each time they run, before the node that owns them (profiles).
    public func run(_ inputs: [String: Tensor], observe: ((Node, [Tensor]) -> Void)? = nil,
                    intoSubgraphs: Bool = false) throws -> [String: Tensor] {
        var feeds: [Tensor] = []
        feeds.reserveCapacity(inputSlots.count)
        for (info, _) in inputSlots {
            guard let t = inputs[info.name] else {
                throw KernelError.badGraphInput(name: info.name, reason: "no value given")
            }
            feeds.append(t)
        }
        let values = try run(positional: feeds, observe: observe, intoSubgraphs: intoSubgraphs)
        var result: [String: Tensor] = [:]
        for ((name, _), t) in zip(outputSlots, values) { result[name] = t }
        return result
    }

    /// Runs the graph on its runtime inputs in declaration order; returns the
    /// outputs in declaration order (the dictionary-free path loop bodies take).
    func run(positional feeds: [Tensor], observe: ((Node, [Tensor]) -> Void)?, intoSubgraphs: Bool) throws -> [Tensor] {
        guard feeds.count == inputSlots.count else {
            throw KernelError.badGraphInput(name: inputSlots.dropFirst(feeds.count).first?.0.name ?? "?",
                                            reason: "\(inputSlots.count) inputs expected, \(feeds.count) given")
        }
        // What the run makes (and its inputs, which take the place of a constant of the same name).
        let constants = constantSlots  // a local: no exclusivity check per read
        var values = [Tensor?](repeating: nil, count: constants.count)
        for ((info, s), t) in zip(inputSlots, feeds) {
            try Interpreter.check(t, against: info)
            values[s] = t
        }
        let inner = intoSubgraphs ? observe : nil
        let threads = options.threads
        // One argument buffer for every step: the context releases it before the next step.
        var args = [Tensor?]()
        for step in steps {
            args.removeAll(keepingCapacity: true)
            for s in step.inputSlots {
                guard s >= 0 else { args.append(nil); continue }
                if let v = values[s] {
                    args.append(v)
                } else if let v = constants[s] {
                    args.append(v)
                } else {
                    throw KernelError.invalidInput(node: step.node.node.label, op: step.node.node.opType,
                                                   reason: "input '\(slotNames[s])' has no value")
                }
            }
            let outs = try step.kernel(KernelContext(step.node, inputs: args, threads: threads, observe: inner))
            for (i, s) in step.outputSlots.enumerated() where s >= 0 {
                guard i < outs.count else {
                    throw KernelError.invalidInput(node: step.node.node.label, op: step.node.node.opType,
                                                   reason: "output \(i) ('\(slotNames[s])') is not produced by this kernel")
                }
                values[s] = outs[i]
            }
            observe?(step.node.node, outs)
            for s in step.freeAfter { values[s] = nil }
        }
        return try outputSlots.map { name, s in
            guard let t = values[s] ?? constants[s] else { throw GraphError.undefinedOutput(name) }
            return t
        }
    }

    /// Checks a tensor against a declared input: dtype class and fixed dims.
    public static func check(_ t: Tensor, against info: ValueInfo) throws {
        if let dt = info.dtype {
            if dt != t.dtype {
                throw KernelError.badGraphInput(name: info.name, reason: "expected dtype \(dt), got \(t.dtype)")
            }
        }
        if let dims = info.shape {
            guard dims.count == t.shape.count else {
                throw KernelError.badGraphInput(name: info.name, reason: "expected shape \(info.shapeDescription), got \(t.shape)")
            }
            for (d, v) in zip(dims, t.shape) {
                if let f = d.value, f != v {
                    throw KernelError.badGraphInput(name: info.name, reason: "expected shape \(info.shapeDescription), got \(t.shape)")
                }
            }
        }
    }
}

#if canImport(Glibc)
import Glibc
private func sysconfCores() -> Int { Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))) }
#elseif canImport(Darwin)
import Darwin
private func sysconfCores() -> Int { Int(sysconf(_SC_NPROCESSORS_ONLN)) }
#endif
