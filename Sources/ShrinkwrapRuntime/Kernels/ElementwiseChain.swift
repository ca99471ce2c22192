import CKernels
import ShrinkwrapIR

/// A run of float elementwise nodes the interpreter's planner merged into one node
/// (`ExecutionPlanner.fuseElementwiseChains`): exporters spell out HardSwish, SiLU, GELU and
/// LayerNorm's tail as Add / Mul / Div / Clip / Sigmoid … nodes, each a full pass over memory.
/// The chain runs them block by block while a block is in cache, each step with the standalone
/// kernel's own per-element function (the same `EWOps` / `ActivationKernels` functors and
/// `SIMDKernels` math, float16 values rounded after every step), so it gives the separate nodes'
/// bits. When the inputs are not all one shape or scalars, or not all floating point of one
/// dtype, the chain runs its steps through the ordinary kernels instead.
///
/// The program lives in the node's attributes: `ops` (one op type per step), `operands` (three
/// value numbers per step, -1 for none: numbers below the input count name the node's inputs,
/// the rest the steps' results in order) and `parameters` (two floats per step: LeakyRelu's
/// alpha, HardSigmoid's alpha and beta). The last step's result is the output.
enum ElementwiseChain {
    static let opType = "ElementwiseChain"
    static let opsAttribute = "__chain_ops", operandsAttribute = "__chain_operands", parametersAttribute = "__chain_parameters"

    /// The ops a chain can hold, with how many inputs each may read.
    static let arity: [String: ClosedRange<Int>] = [
        "Add": 2...2, "Sub": 2...2, "Mul": 2...2, "Div": 2...2, "Max": 2...2, "Min": 2...2, "Pow": 2...2,
        "Relu": 1...1, "Neg": 1...1, "Abs": 1...1, "Sqrt": 1...1, "Reciprocal": 1...1, "Erf": 1...1,
        "Exp": 1...1, "Tanh": 1...1, "Sigmoid": 1...1, "HardSwish": 1...1, "HardSigmoid": 1...1, "LeakyRelu": 1...1,
        "Clip": 1...3,
    ]

    /// Whether `n` may join a chain (its kind and form; dtypes are checked when it runs).
    static func accepts(_ n: Node) -> Bool {
        guard let range = arity[n.opType], n.outputs.count == 1, !n.outputs[0].isEmpty, range.contains(n.inputs.count),
              !n.inputs[0].isEmpty, !n.hasSubgraphs else { return false }
        if n.opType == "Clip" && (n.attributes["min"] != nil || n.attributes["max"] != nil) { return false }
        if n.opType != "Clip" && n.inputs.contains(where: \.isEmpty) { return false }
        return true
    }

    /// The two parameters of step `n` (from its attributes, with the ops' defaults).
    static func parameters(_ n: Node) -> [Float]? {
        func float(_ key: String, _ def: Float) -> Float? {
            switch n.attributes[key] {
            case nil: return def
            case .float(let v)?: return v
            default: return nil
            }
        }
        switch n.opType {
        case "LeakyRelu": return float("alpha", 0.01).map { [$0, 0] }
        case "HardSigmoid": guard let a = float("alpha", 0.2), let b = float("beta", 0.5) else { return nil }; return [a, b]
        default: return [0, 0]
        }
    }

    struct Step {
        let op: String
        let operands: [Int]  // value numbers, present ones only
        let p0: Float, p1: Float
    }

    static func program(_ c: KernelContext) throws -> [Step] {
        let ops = try c.strings(opsAttribute) ?? []
        let operands = try c.ints(operandsAttribute) ?? []
        let params = try c.floats(parametersAttribute) ?? []
        guard !ops.isEmpty, operands.count == 3 * ops.count, params.count == 2 * ops.count else {
            throw c.badAttribute(opsAttribute, "a chain needs ops with 3 operands and 2 parameters each")
        }
        var steps: [Step] = []
        let inputs = c.inputs.count
        for (k, op) in ops.enumerated() {
            guard let range = arity[op] else { throw c.badAttribute(opsAttribute, "'\(op)' cannot run in a chain") }
            let refs = Array(operands[(3 * k)..<(3 * k + 3)])
            let present = op == "Clip" ? refs : Array(refs.prefix(range.upperBound))
            guard present.count >= range.lowerBound, present.allSatisfy({ $0 >= -1 && $0 < inputs + k }),
                  present.first.map({ $0 >= 0 }) ?? false else {
                throw c.badAttribute(operandsAttribute, "step \(k) (\(op)) reads values \(refs), only \(inputs + k) exist")
            }
            steps.append(Step(op: op, operands: present, p0: params[2 * k], p1: params[2 * k + 1]))
        }
        return steps
    }

    static func kernel(_ c: KernelContext) throws -> [Tensor] {
        let steps = try program(c)
        if let fast = try runFused(c, steps) { return [fast] }
        return [try runNodeByNode(c, steps)]
    }

    /// The steps as ordinary kernels, one whole tensor at a time (shapes that broadcast, integer inputs).
    static func runNodeByNode(_ c: KernelContext, _ steps: [Step]) throws -> Tensor {
        var values: [Tensor?] = c.inputs
        for (k, s) in steps.enumerated() {
            guard let kernel = KernelRegistry.kernels[s.op] else { throw KernelError.noKernel(op: s.op) }
            var attributes: [String: Attribute] = [:]
            if s.op == "LeakyRelu" { attributes["alpha"] = .float(s.p0) }
            if s.op == "HardSigmoid" { attributes = ["alpha": .float(s.p0), "beta": .float(s.p1)] }
            let args = s.operands.map { $0 < 0 ? nil : values[$0] }
            let node = Node(name: "\(c.node.label) step \(k)", opType: s.op, inputs: args.indices.map { args[$0] == nil ? "" : "v\($0)" },
                            outputs: ["r"], attributes: attributes)
            guard let out = try kernel(KernelContext(node: node, inputs: args, threads: c.threads)).first else {
                throw c.fail("step \(k) (\(s.op)) gave no result")
            }
            values.append(out)
        }
        guard let last = values.last, let result = last else { throw c.fail("the chain computed nothing") }
        return result
    }
}

// MARK: - The fused run

extension ElementwiseChain {
    /// Elements per block: every step's block of a chunk stays in L1 / L2.
    static let block = 2048

    /// One operand of a step over one block: `count` floats at `p`, or the scalar `s` everywhere.
    struct Operand {
        let p: UnsafePointer<Float>?
        let s: Float
        @inline(__always) subscript(i: Int) -> Float { p.map { $0[i] } ?? s }
    }

    /// The chain in one pass per block, or nil when its inputs do not allow it.
    static func runFused(_ c: KernelContext, _ steps: [Step]) throws -> Tensor? {
        var dtype: DType?
        var arrays: [[Float]] = []
        var shapes: [[Int]] = []  // every value's shape: the inputs', then each step's
        for t in c.inputs {
            guard let t, let f = t.floats else { return nil }
            if let d = dtype, d != t.dtype { return nil }
            dtype = t.dtype
            arrays.append(f)
            shapes.append(t.shape)
        }
        guard let dtype else { return nil }
        for s in steps {
            if s.op == "Clip" {
                // Clip's bounds must be scalar inputs, as its own kernel requires.
                for v in s.operands.dropFirst() where v >= 0 { guard v < c.inputs.count, arrays[v].count == 1 else { return nil } }
                shapes.append(shapes[s.operands[0]])
                continue
            }
            var shape: [Int] = []
            for v in s.operands where v >= 0 {
                guard let b = broadcast(shape, shapes[v]) else { return nil }
                shape = b
            }
            shapes.append(shape)
        }
        guard let full = shapes.last else { return nil }
        let inputCount = c.inputs.count
        // How each input is read: in place (the full shape), as one value, or repeating (`Repeat`).
        var repeats: [Repeat?] = []
        for (v, a) in arrays.enumerated() {
            if a.count == 1 || shapes[v].reduce(1, *) == full.reduce(1, *) { repeats.append(nil); continue }
            guard let r = Repeat(shapes[v], in: full) else { return nil }
            repeats.append(r)
        }
        // Pow's kernel takes its fast exponents (2, 1, 0.5) when the exponent is one value and the
        // base has the result's shape.
        let fastPow = steps.enumerated().map { k, s in
            s.op == "Pow" && s.operands.count == 2 && shapes[s.operands[1]].reduce(1, *) == 1
                && shapes[s.operands[0]] == shapes[inputCount + k]
        }
        let n = try c.checkedCount(full)
        if n == 0 { return Tensor(dtype: dtype, shape: full, storage: .float([])) }
        let result = [Float](unsafeUninitializedCapacity: n) { out, count in
            count = n
            guard let outBase = out.baseAddress else { return }
            let o = SendablePointer(outBase)
            withPointers(arrays) { inputs in
                let blocks = (n + block - 1) / block
                parallelChunks(blocks, threads: c.threads, minChunk: max(1, 32768 / block)) { range in
                    let scratch = UnsafeMutablePointer<Float>.allocate(capacity: block * (steps.count + inputCount))
                    defer { scratch.deallocate() }
                    let spread = scratch + block * steps.count  // repeating inputs, spread over the block
                    for b in range {
                        let start = b * block, len = min(block, n - start)
                        for (v, r) in repeats.enumerated() {
                            if let r, let p = inputs[v] { r.fill(spread + v * block, from: p, start: start, count: len) }
                        }
                        func operand(_ v: Int) -> Operand {
                            if v < inputCount {
                                guard let p = inputs[v] else { return Operand(p: nil, s: 0) }
                                if repeats[v] != nil { return Operand(p: UnsafePointer(spread + v * block), s: 0) }
                                return arrays[v].count == 1 ? Operand(p: nil, s: p[0]) : Operand(p: p + start, s: 0)
                            }
                            return Operand(p: UnsafePointer(scratch + (v - inputCount) * block), s: 0)
                        }
                        for (k, s) in steps.enumerated() {
                            let dst = k == steps.count - 1 ? o.p + start : scratch + k * block
                            apply(s, s.operands.map { $0 < 0 ? nil : operand($0) }, dst, len, fastPow: fastPow[k])
                            if dtype != .float32 { for i in 0..<len { dst[i] = dtype.rounded(dst[i]) } }
                        }
                    }
                }
            }
        }
        return Tensor(dtype: dtype, shape: full, storage: .float(result))
    }

    /// The multidirectional broadcast of two shapes (nil when they do not broadcast).
    static func broadcast(_ a: [Int], _ b: [Int]) -> [Int]? {
        let r = Swift.max(a.count, b.count)
        var out = [Int](repeating: 1, count: r)
        for i in 0..<r {
            let x = i < r - a.count ? 1 : a[i - (r - a.count)], y = i < r - b.count ? 1 : b[i - (r - b.count)]
            guard x == y || x == 1 || y == 1 else { return nil }
            out[i] = x == 1 ? y : x
        }
        return out
    }

    /// An input that broadcasts to the full shape along one run of axes: its elements are the full
    /// shape's axes [a, b) (the rest 1), so full element i reads element (i / inner) mod count —
    /// a bias per channel ([C, 1, 1]), a vector along the last axes ([1, 1, W]).
    struct Repeat {
        let inner: Int, count: Int

        init?(_ shape: [Int], in full: [Int]) {
            guard shape.count <= full.count else { return nil }
            let aligned = [Int](repeating: 1, count: full.count - shape.count) + shape
            let kept = aligned.indices.filter { aligned[$0] != 1 }
            guard let a = kept.first, let b = kept.last, kept.count == b - a + 1,
                  (a...b).allSatisfy({ aligned[$0] == full[$0] }) else { return nil }
            inner = full[(b + 1)...].reduce(1, *)
            count = aligned[a...b].reduce(1, *)
        }

        /// Writes full elements start ..< start + n of the input at `x` into `dst`.
        func fill(_ dst: UnsafeMutablePointer<Float>, from x: UnsafePointer<Float>, start: Int, count n: Int) {
            var i = 0, index = (start / inner) % count, run = inner - start % inner
            while i < n {
                let len = Swift.min(run, n - i)
                if inner == 1 {
                    // A periodic input: copy it in runs up to its end.
                    let seg = Swift.min(n - i, count - index)
                    dst.advanced(by: i).update(from: x + index, count: seg)
                    i += seg
                    index = 0
                    continue
                }
                dst.advanced(by: i).update(repeating: x[index], count: len)
                i += len
                run = inner
                index = index + 1 == count ? 0 : index + 1
            }
        }
    }

    /// Calls `body` with the base pointer of each array (nil for an empty one), kept alive for the call.
    static func withPointers<R>(_ arrays: [[Float]], _ body: ([UnsafePointer<Float>?]) -> R) -> R {
        func step(_ i: Int, _ acc: [UnsafePointer<Float>?]) -> R {
            if i == arrays.count { return body(acc) }
            return arrays[i].withUnsafeBufferPointer { step(i + 1, acc + [$0.baseAddress]) }
        }
        return step(0, [])
    }

    @inline(__always)
    static func binary<F: EWBinaryOp>(_ f: F, _ a: Operand, _ b: Operand, _ y: UnsafeMutablePointer<Float>, _ n: Int)
    where F.A == Float, F.B == Float, F.R == Float {
        switch (a.p, b.p) {
        case let (pa?, pb?): for i in 0..<n { y[i] = f(pa[i], pb[i]) }
        case let (pa?, nil): let s = b.s; for i in 0..<n { y[i] = f(pa[i], s) }
        case let (nil, pb?): let s = a.s; for i in 0..<n { y[i] = f(s, pb[i]) }
        case (nil, nil): let v = f(a.s, b.s); y.update(repeating: v, count: n)
        }
    }

    @inline(__always)
    static func unary<F: EWUnaryOp>(_ f: F, _ a: Operand, _ y: UnsafeMutablePointer<Float>, _ n: Int) where F.A == Float, F.R == Float {
        if let p = a.p { for i in 0..<n { y[i] = f(p[i]) } } else { y.update(repeating: f(a.s), count: n) }
    }

    /// A binary step on CKernels' vector loops (the same float operation as `EWOps`' functors).
    static func vectorBinary(_ op: Int, _ a: Operand, _ b: Operand, _ y: UnsafeMutablePointer<Float>, _ n: Int) {
        sk_binary(SIMDKernels.level, Int32(op), a.p, a.s, b.p, b.s, y, n)
    }

    /// A simple unary step on CKernels' vector loops (`ActivationKernels` / `EWOps` arithmetic).
    static func vectorUnary(_ op: Int, _ a: Operand, _ y: UnsafeMutablePointer<Float>, _ n: Int, _ p0: Float = 0, _ p1: Float = 0) {
        if let p = a.p {
            sk_unary_simple(SIMDKernels.level, Int32(op), p, y, n, p0, p1)
        } else {
            y.update(repeating: a.s, count: n)
            sk_unary_simple(SIMDKernels.level, Int32(op), UnsafePointer(y), y, n, p0, p1)
        }
    }

    static func vector(_ f: SIMDKernels.Unary, _ a: Operand, _ y: UnsafeMutablePointer<Float>, _ n: Int) {
        if let p = a.p {
            SIMDKernels.apply(f, p, y, count: n)
        } else {
            y.update(repeating: a.s, count: n)
            SIMDKernels.apply(f, UnsafePointer(y), y, count: n)
        }
    }

    /// Step `s` over one block: operands in the step's order (nil for an absent Clip bound).
    /// `fastPow`: Pow takes its kernel's fast exponents.
    static func apply(_ s: Step, _ args: [Operand?], _ y: UnsafeMutablePointer<Float>, _ n: Int, fastPow: Bool) {
        guard let a = args[0] else { return }
        let b = args.count > 1 ? args[1] : nil
        switch s.op {
        case "Add": if let b { vectorBinary(SK_ADD, a, b, y, n) }
        case "Sub": if let b { vectorBinary(SK_SUB, a, b, y, n) }
        case "Mul": if let b { vectorBinary(SK_MUL, a, b, y, n) }
        case "Div": if let b { vectorBinary(SK_DIV, a, b, y, n) }
        case "Max": if let b { vectorBinary(SK_MAX, a, b, y, n) }
        case "Min": if let b { vectorBinary(SK_MIN, a, b, y, n) }
        case "Pow":
            guard let b else { return }
            switch fastPow ? b[0] : .nan {
            case 2: unary(EWOps.Square(), a, y, n)
            case 1: unary(EWIdentity<Float>(), a, y, n)
            case 0.5: unary(EWOps.PowHalf(), a, y, n)
            default: binary(EWOps.PowF(), a, b, y, n)
            }
        case "Relu": vectorUnary(SK_RELU, a, y, n)
        case "Neg": vectorUnary(SK_NEG, a, y, n)
        case "Abs": vectorUnary(SK_ABS, a, y, n)
        case "Sqrt": unary(EWOps.SqrtF(), a, y, n)
        case "Reciprocal": vectorUnary(SK_RECIPROCAL, a, y, n)
        case "Erf": unary(EWOps.ErfF(), a, y, n)
        case "LeakyRelu": vectorUnary(SK_LEAKY_RELU, a, y, n, s.p0)
        case "Clip":
            let lo = args.count > 1 ? args[1]?.s ?? -.infinity : -.infinity
            let hi = args.count > 2 ? args[2]?.s ?? .infinity : .infinity
            vectorUnary(SK_CLIP, a, y, n, lo, hi)
        case "Exp": vector(.exp, a, y, n)
        case "Tanh": vector(.tanh, a, y, n)
        case "Sigmoid": vector(.sigmoid, a, y, n)
        case "HardSwish": vector(.hardSwish, a, y, n)
        case "HardSigmoid": vector(.hardSigmoid(alpha: s.p0, beta: s.p1), a, y, n)
        default: return
        }
    }
}
