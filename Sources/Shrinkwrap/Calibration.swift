import Foundation
import ShrinkwrapCompression
import ShrinkwrapData
import ShrinkwrapIR
import ShrinkwrapRuntime

/// Calibration statistics (`WeightStatistics`) for the weights of Conv, Gemm and MatMul nodes:
/// the original model runs over the calibration inputs (unoptimised, so every intermediate value
/// is the graph's own), and the input each such node multiplies its weight with is folded into
/// running sums as it is made — per input column the sum and the sum of squares, and with
/// `secondMoment` the Gram matrix XᵀX (Conv: over its im2col columns, per group). Nothing is
/// kept per input, so memory is the sums alone. Sums are in Double, in input order; the
/// interpreter's values and the GEMM's sums do not depend on the thread count, so neither do
/// the statistics.
public enum Calibration {
    public struct Error: UserFacingError { public let description: String }

    /// Weights wider than this (input columns) get no second moment (it would take columns² × 8 bytes).
    public static let secondMomentColumnLimit = 8192
    /// The most memory all second moments together may take (their Double sums and float32 scratch);
    /// the weights past it, in graph order, get none (gptq then rounds them to nearest and says so).
    public static let secondMomentBudget = 2 << 30

    /// One weight's running sums.
    final class Sums {
        enum Kind { case conv(Node), rows, lookup }
        let weight: String, kind: Kind
        let rows: Int, columns: Int, groups: Int
        var count = 0
        var sum: [Double], sumSquares: [Double]
        var gram: [Double]?
        var scratch: [Float]

        init(weight: String, kind: Kind, rows: Int, columns: Int, groups: Int, gram: Bool) {
            self.weight = weight; self.kind = kind; self.rows = rows; self.columns = columns; self.groups = groups
            sum = [Double](repeating: 0, count: groups * columns)
            sumSquares = sum
            self.gram = gram ? [Double](repeating: 0, count: groups * columns * columns) : nil
            scratch = gram ? [Float](repeating: 0, count: columns * columns) : []
        }

        var statistics: WeightStatistics {
            let n = Double(max(count, 1))
            if case .lookup = kind { return WeightStatistics(rows: rows, columns: columns, count: count, rowShare: lookups.map { $0 / n }) }
            return WeightStatistics(rows: rows, columns: columns, groups: groups, count: count,
                                    mean: sum.map { $0 / n }, meanSquare: sumSquares.map { $0 / n },
                                    secondMoment: gram?.map { $0 / n })
        }

        /// Adds `vectors` input vectors for group `g`: a [vectors, columns] matrix (`byColumn` false)
        /// or a [columns, vectors] one (true; im2col's layout).
        func add(_ p: UnsafePointer<Float>, group g: Int, vectors: Int, byColumn: Bool, threads: Int) {
            let (vStride, kStride) = byColumn ? (1, vectors) : (columns, 1)
            let base = g * columns
            for k in 0..<columns {
                var s = 0.0, q = 0.0
                var at = p + k * kStride
                for _ in 0..<vectors { let x = Double(at.pointee); s += x; q += x * x; at += vStride }
                sum[base + k] += s; sumSquares[base + k] += q
            }
            if g == 0 { count += vectors }
            guard gram != nil else { return }
            // XᵀX in float32 per call (one GEMM), summed in Double.
            scratch.withUnsafeMutableBufferPointer { c in
                guard let cp = c.baseAddress else { return }
                if !byColumn {  // rows are vectors: [V, K]
                    GEMM.sgemm(transA: true, transB: false, m: columns, n: columns, k: vectors, a: p, lda: vStride,
                               b: p, ldb: vStride, c: cp, ldc: columns, threads: threads)
                } else {  // rows are columns: [K, V]
                    GEMM.sgemm(transA: false, transB: true, m: columns, n: columns, k: vectors, a: p, lda: kStride,
                               b: p, ldb: kStride, c: cp, ldc: columns, threads: threads)
                }
            }
            let off = g * columns * columns
            for i in 0..<(columns * columns) { gram?[off + i] += Double(scratch[i]) }
        }

        func add(_ t: Tensor, threads: Int) throws {
            if case .lookup = kind { return try addLookups(t) }
            guard let x = t.floats else { throw Error(description: "calibration: the input of '\(weight)'s node is \(t.dtype), not floating point") }
            switch kind {
            case .lookup:
                return
            case .conv(let node):
                guard let weightShape = weightShape else { return }
                try NNKernels.convPatches(node: node, input: t, weightShape: weightShape) { g, m, rows, positions in
                    guard rows == columns else { throw Error(description: "calibration: '\(weight)': \(rows) patch rows for \(columns) columns") }
                    add(m, group: g, vectors: positions, byColumn: true, threads: threads)
                }
            case .rows:
                guard let last = t.shape.last, last == columns, x.count % columns == 0 else {
                    throw Error(description: "calibration: the input of '\(weight)' has shape \(t.shape); its last axis should be \(columns)")
                }
                x.withUnsafeBufferPointer { b in
                    guard let p = b.baseAddress else { return }
                    add(p, group: 0, vectors: x.count / columns, byColumn: false, threads: threads)
                }
            }
        }
        var weightShape: [Int]?
        /// Lookups per row of a looked-up table.
        var lookups: [Double] = []

        func addLookups(_ t: Tensor) throws {
            guard !t.dtype.isFloatingPoint, let ids = t.ints else {
                throw Error(description: "calibration: the indices of '\(weight)' are \(t.dtype), not integers")
            }
            if lookups.isEmpty { lookups = [Double](repeating: 0, count: rows) }
            for i in ids {
                let r = i < 0 ? Int(truncatingIfNeeded: i) + rows : Int(truncatingIfNeeded: i)
                if r >= 0 && r < rows { lookups[r] += 1 }
            }
            count += ids.count
        }
    }

    /// Which node input each weight multiplies, and how: Conv (not ConvTranspose), Gemm without
    /// transA, and MatMul with a rank-2 weight, whose weight is a float32 constant read by that node alone.
    static func targets(_ graph: Graph, secondMoment: Bool) -> [(activation: String, sums: Sums)] {
        var readers: [String: Int] = [:]
        for node in graph.nodes { for name in Set(node.inputs) where graph.isConstant(name) { readers[name, default: 0] += 1 } }
        var out: [(String, Sums)] = []
        var budget = secondMomentBudget
        // Embedding tables: rows looked up by computed indices (the roles' embedding rule), counted.
        for node in graph.nodes where node.opType == "Gather" {
            guard let table = node.input(0), let ids = node.input(1), !graph.isConstant(ids), readers[table] == 1,
                  let c = graph.constant(named: table), case .dense(let t) = c.encoding, t.dtype == .float32, t.rank == 2 else { continue }
            if case .int(let a)? = node.attributes["axis"], a != 0 && a != -2 { continue }
            guard let m = WeightMatrix(shape: t.shape, outputAxis: 0) else { continue }
            out.append((ids, Sums(weight: table, kind: .lookup, rows: m.rows, columns: m.columns, groups: 1, gram: false)))
        }
        for node in graph.nodes {
            guard node.inputs.count >= 2, let w = node.input(1), let x = node.input(0), readers[w] == 1,
                  let c = graph.constant(named: w), case .dense(let t) = c.encoding, t.dtype == .float32 else { continue }
            let shape = t.shape
            var sums: Sums? = nil
            func make(_ kind: Sums.Kind, outputAxis: Int, groups: Int) -> Sums? {
                guard let m = WeightMatrix(shape: shape, outputAxis: outputAxis), m.rows % groups == 0 else { return nil }
                var gram = secondMoment && m.columns <= secondMomentColumnLimit
                if gram {
                    let bytes = m.columns * m.columns * (8 * groups + 4)
                    if bytes <= budget { budget -= bytes } else { gram = false }
                }
                return Sums(weight: w, kind: kind, rows: m.rows, columns: m.columns, groups: groups, gram: gram)
            }
            switch node.opType {
            case "Conv" where shape.count >= 3:
                var group = 1
                if case .int(let g)? = node.attributes["group"] { group = g }
                guard group >= 1 else { continue }
                sums = make(.conv(node), outputAxis: 0, groups: group)
                sums?.weightShape = shape
            case "Gemm" where shape.count == 2:
                if case .int(let a)? = node.attributes["transA"], a != 0 { continue }
                var transB = false
                if case .int(let b)? = node.attributes["transB"] { transB = b != 0 }
                sums = make(.rows, outputAxis: transB ? 0 : 1, groups: 1)
            case "MatMul" where shape.count == 2:
                sums = make(.rows, outputAxis: 1, groups: 1)
            default:
                continue
            }
            if let sums { out.append((x, sums)) }
        }
        return out
    }

    /// Runs `graph` over `inputs` and returns the statistics of every weight `targets` finds, by
    /// weight name. `progress(k)` after each input.
    public static func collect(_ graph: Graph, inputs: [[String: Tensor]], secondMoment: Bool, threads: Int? = nil,
                               progress: ((Int) -> Void)? = nil) throws -> [String: WeightStatistics] {
        guard !inputs.isEmpty else { throw Error(description: "calibration: no inputs") }
        let found = targets(graph, secondMoment: secondMoment)
        guard !found.isEmpty else { return [:] }
        var byActivation: [String: [Sums]] = [:]
        for (a, s) in found { byActivation[a, default: []].append(s) }
        let n = max(1, threads ?? Interpreter.defaultThreads)
        let interpreter = try Interpreter(graph: graph, options: .init(threads: n, optimize: false))
        var failure: (any Swift.Error)? = nil
        for (k, sample) in inputs.enumerated() {
            for (name, t) in sample.sorted(by: { $0.key < $1.key }) {
                for s in byActivation[name] ?? [] { try s.add(t, threads: n) }
            }
            _ = try interpreter.run(sample) { node, outs in
                guard failure == nil else { return }
                for (i, name) in node.outputs.enumerated() where i < outs.count {
                    for s in byActivation[name] ?? [] {
                        do { try s.add(outs[i], threads: n) } catch { failure = error }
                    }
                }
            }
            if let failure { throw failure }
            progress?(k + 1)
        }
        var out: [String: WeightStatistics] = [:]
        for (_, s) in found where s.count > 0 { out[s.weight] = s.statistics }
        return out
    }
}

extension Calibration {
    /// The calibration set from `specs` (the same forms as `--data`), checked before any work: the
    /// loader checks shapes and dtypes against the model's inputs; here, that there is at least one
    /// sample and that every value is finite (a NaN would poison every statistic it reaches).
    public static func load(_ specs: [String], graph: Graph, options: DataOptions) throws -> InputSet {
        guard !specs.isEmpty else { throw Error(description: "--calibration: no data given") }
        let set: InputSet
        do { set = try InputData.load(specs, graph: graph, options: options) } catch {
            throw Error(description: "--calibration: \(error)")
        }
        guard !set.samples.isEmpty else { throw Error(description: "--calibration \(specs.joined(separator: " ")): no samples") }
        for (k, sample) in set.samples.enumerated() {
            for (name, t) in sample.sorted(by: { $0.key < $1.key }) {
                guard let f = t.floats, let i = f.firstIndex(where: { !$0.isFinite }) else { continue }
                let source = k < set.sources.count ? set.sources[k] : "sample \(k)"
                throw Error(description: "--calibration \(source): input '\(name)' element \(i) is \(f[i]); calibration data must be finite")
            }
        }
        return set
    }
}

extension CompressionPlan {
    /// Every rule the plan holds.
    var rules: [CompressionRule] {
        ([global] + byOpType.values.map { Optional($0) } + byName.values.map { Optional($0) }).compactMap { choice in
            if case .compress(let r)? = choice { return r }
            return nil
        }
    }

    /// Whether any rule uses a data-aware method (it then needs calibration statistics).
    public var needsCalibration: Bool { biasCorrection || rules.contains { $0.options.method.needsCalibration } }

    /// Whether any rule uses gptq (it needs the inputs' second moment, not just their mean squares).
    public var needsSecondMoment: Bool { rules.contains { $0.options.method == .gptq } }
}

extension Models {
    /// The calibration statistics `plan` needs, from the data `specs` names (nil: none given).
    /// A data-aware method without data, or data no rule reads, is an error before any work.
    public static func calibrate(_ graph: Graph, plan: CompressionPlan?, specs: [String], options: DataOptions = DataOptions(),
                                 threads: Int? = nil, progress: ((String) -> Void)? = nil) throws -> [String: WeightStatistics] {
        let needs = plan?.needsCalibration ?? false
        if specs.isEmpty {
            if needs { throw Calibration.Error(description: "--method weighted / gptq and --bias-correction need --calibration DATA (inputs like --data's)") }
            return [:]
        }
        guard needs else { throw Calibration.Error(description: "--calibration is read by the data-aware methods only: add --method weighted or gptq, or --bias-correction") }
        let set = try Calibration.load(specs, graph: graph, options: options)
        if let want = plan?.calibrationSHA256, want != set.sha256 {
            throw Calibration.Error(description: "the plan was made with calibration data of sha256 \(want); --calibration \(specs.joined(separator: " ")) has sha256 \(set.sha256), which would give other bytes")
        }
        let started = Date()
        let stats = try Calibration.collect(graph, inputs: set.samples, secondMoment: plan?.needsSecondMoment ?? false, threads: threads)
        progress?(String(format: "calibration: %d inputs (%@), statistics for %d weights in %.1f s", set.samples.count, set.description,
                         stats.count, Date().timeIntervalSince(started)))
        return stats
    }
}
