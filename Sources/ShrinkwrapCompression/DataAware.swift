import ShrinkwrapIR

/// How a codec places a weight on its grid (its scales, offsets or table) and picks each code.
/// Every codec offers `nearest`; the data-aware methods need calibration statistics
/// (`WeightStatistics`) and say in the log what they used.
public enum CompressionMethod: String, Sendable, Equatable, Hashable, CaseIterable, CustomStringConvertible {
    /// Round to nearest on a grid made from the weights alone (min / max, plain k-means).
    case nearest
    /// The grid fitted to the weights weighted by the mean square of the inputs each one multiplies
    /// (llama.cpp's imatrix): importance-weighted k-means, error-minimising range (clipping) search
    /// for linear scales and offsets; then round to nearest.
    case weighted
    /// The weighted grid, then codes chosen one input column at a time, each column's rounding error
    /// pushed onto the columns not yet rounded through the inverse of the input's second moment
    /// (GPTQ / OBQ: minimises the layer's output error on the calibration data, not the weight error).
    case gptq

    public var description: String { rawValue }

    /// Whether the method reads calibration statistics.
    public var needsCalibration: Bool { self != .nearest }

    /// One line per method for `--help`.
    public static let help = "nearest (round to nearest, the default), weighted (grid fitted with the inputs' mean squares as weights: imatrix k-means, clipping search; needs --calibration), gptq (weighted grid, then sequential error compensation through the input second moment; needs --calibration)"

    public init(parsing text: String) throws(CompressionError) {
        guard let m = CompressionMethod(rawValue: text) else {
            throw .badPlan(file: "(method)", reason: "unknown method '\(text)' (expected \(CompressionMethod.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        self = m
    }
}

/// A weight seen as a matrix: one row per output channel (along `outputAxis`), one column per input
/// it multiplies (the other axes in order: a Conv filter's (c, kh, kw), a MatMul weight's K).
/// Element (r, k) is at `index(r, k)`.
public struct WeightMatrix: Sendable, Equatable {
    public let rows: Int, columns: Int
    /// Elements after the output axis (the contiguous part of a column index).
    let inner: Int

    public init?(shape: [Int], outputAxis: Int) {
        guard shape.count >= 1, (0..<shape.count).contains(outputAxis), shape.allSatisfy({ $0 > 0 }) else { return nil }
        rows = shape[outputAxis]
        inner = shape[(outputAxis + 1)...].reduce(1, *)
        columns = shape.reduce(1, *) / rows
    }

    @inline(__always)
    public func index(_ r: Int, _ k: Int) -> Int { (k / inner) * rows * inner + r * inner + k % inner }

    /// Row and column of element `i`.
    @inline(__always)
    public func position(_ i: Int) -> (row: Int, column: Int) {
        let block = rows * inner
        let o = i / block, rem = i - o * block
        return (rem / inner, o * inner + rem % inner)
    }
}

/// What calibration data says about the inputs one weight multiplies, in the weight's matrix terms
/// (`WeightMatrix`): the rows split into `groups` equal runs (a grouped or depthwise Conv), each
/// run multiplying its own inputs; for each, the mean, the mean square and (when asked) the second
/// moment E[x xᵀ] of the `columns` inputs over every input vector seen (`count`: positions × samples).
public struct WeightStatistics: Sendable, Equatable {
    public var rows: Int
    public var columns: Int
    public var groups: Int
    public var count: Int
    /// groups × columns.
    public var mean: [Double]
    /// groups × columns.
    public var meanSquare: [Double]
    /// groups × columns × columns, row-major per group; nil when only the diagonal was gathered.
    public var secondMoment: [Double]?
    /// For a table whose rows are looked up by index (an embedding), instead of the above: how often
    /// each row was read, as a share of the lookups. Its input is a one-hot vector, so the share is
    /// the mean square of the input each element of that row multiplies.
    public var rowShare: [Double]?

    public init(rows: Int, columns: Int, groups: Int, count: Int, mean: [Double], meanSquare: [Double], secondMoment: [Double]? = nil) {
        self.rows = rows; self.columns = columns; self.groups = groups; self.count = count
        self.mean = mean; self.meanSquare = meanSquare; self.secondMoment = secondMoment
    }

    /// The statistics of a looked-up table: `rowShare[r]` of the `count` lookups read row r.
    public init(rows: Int, columns: Int, count: Int, rowShare: [Double]) {
        self.init(rows: rows, columns: columns, groups: 1, count: count, mean: [], meanSquare: [])
        self.rowShare = rowShare
    }

    /// Why these statistics do not fit `w` (nil when they do).
    public func misfit(_ w: WeightInput) -> String? {
        guard let m = WeightMatrix(shape: w.shape, outputAxis: w.outputAxis) else { return "the weight has an empty axis" }
        if m.rows != rows || m.columns != columns { return "statistics for \(rows) × \(columns), weight is \(m.rows) × \(m.columns)" }
        if groups < 1 || rows % groups != 0 { return "\(groups) input groups do not divide \(rows) rows" }
        if let share = rowShare {
            if share.count != rows || !mean.isEmpty || !meanSquare.isEmpty || secondMoment != nil { return "row shares of the wrong size" }
        } else if mean.count != groups * columns || meanSquare.count != groups * columns { return "statistics of the wrong size" }
        if let s = secondMoment, s.count != groups * columns * columns { return "second moment of the wrong size" }
        if count < 1 { return "no calibration vectors" }
        return nil
    }

    /// Per-element importance: the mean square of the input each element multiplies (a looked-up
    /// table: its row's share of the lookups). A column no calibration input ever reached (all zero)
    /// keeps a small weight, a thousandth of its row group's mean (of the whole weight's, when the
    /// group saw nothing at all), so its weights still get a sensible grid.
    public func importance(_ w: WeightInput) -> [Float] {
        guard let m = WeightMatrix(shape: w.shape, outputAxis: w.outputAxis) else { return [] }
        if let share = rowShare {
            let avg = share.reduce(0, +) / Double(max(share.count, 1))
            let floor = avg > 0 ? avg * 1e-3 : 1
            return (0..<w.values.count).map { Float(max(share[m.position($0).row], floor)) }
        }
        let perGroup = rows / max(groups, 1)
        let overall = meanSquare.reduce(0, +) / Double(max(meanSquare.count, 1))
        var floor = [Double](repeating: 0, count: groups)
        for g in 0..<groups {
            let slice = meanSquare[(g * columns)..<((g + 1) * columns)]
            let avg = slice.reduce(0, +) / Double(max(columns, 1))
            floor[g] = avg > 0 ? avg * 1e-3 : (overall > 0 ? overall * 1e-3 : 1)
        }
        var out = [Float](repeating: 0, count: w.values.count)
        for i in 0..<out.count {
            let (r, k) = m.position(i)
            let g = r / perGroup
            out[i] = Float(max(meanSquare[g * columns + k], floor[g]))
        }
        return out
    }
}
