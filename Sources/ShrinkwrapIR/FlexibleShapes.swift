/// The shapes an input may take beyond the one the graph is pinned to: what
/// `--input-shape NAME=1,3,48,32..2048` (a range per dimension) or
/// `NAME=1,3,48,320|1,3,48,640` (a list of whole shapes) asks for. The graph
/// itself runs and is prepared at `defaultShape`; formats that keep flexible
/// shapes write the rest (Core ML: size ranges or enumerated shapes; ONNX:
/// the varying dims free again), formats that cannot refuse the conversion.
public struct FlexibleShape: Sendable, Equatable {
    /// One dimension's sizes: lower...upper, upper nil when unbounded.
    public struct SizeRange: Sendable, Equatable {
        public var lower: Int
        public var upper: Int?
        public init(lower: Int, upper: Int?) { self.lower = lower; self.upper = upper }
        public var isFixed: Bool { upper == lower }
        public var description: String { isFixed ? "\(lower)" : "\(lower)..\(upper.map(String.init) ?? "")" }
    }

    public enum Sizes: Sendable, Equatable {
        /// One range per dimension (fixed dimensions: lower == upper).
        case ranges([SizeRange])
        /// Whole shapes, all of the input's rank; the first is the default.
        case enumerated([[Int]])
    }

    public var input: String
    public var sizes: Sizes
    /// The input's dims before it was pinned (an ONNX exporter gives the
    /// varying ones back their names), when known.
    public var original: [Dim]?

    public init(input: String, sizes: Sizes, original: [Dim]? = nil) {
        self.input = input; self.sizes = sizes; self.original = original
    }

    /// The shape the graph is pinned to: the lower bounds, or the first shape.
    public var defaultShape: [Int] {
        switch sizes {
        case .ranges(let r): return r.map(\.lower)
        case .enumerated(let shapes): return shapes.first ?? []
        }
    }

    /// The axes whose size may vary.
    public var varyingAxes: [Int] {
        switch sizes {
        case .ranges(let r): return r.indices.filter { !r[$0].isFixed }
        case .enumerated(let shapes):
            let first = shapes.first ?? []
            return first.indices.filter { k in shapes.contains { $0.count > k && $0[k] != first[k] } }
        }
    }

    /// Other shapes inside the set, to check that a model written at the
    /// default shape holds for them too: every enumerated shape; for ranges,
    /// every varying dimension at its upper bound (unbounded: 3× the lower
    /// bound), then all near the middle, rounded down to a multiple of the
    /// lower bound's largest power-of-two factor up to 32 (detectors and OCR
    /// models take sizes in steps of 32 from a lower bound of that kind).
    public var probeShapes: [[Int]] {
        switch sizes {
        case .enumerated(let shapes):
            return Array(shapes.dropFirst())
        case .ranges(let r):
            let high = r.map { $0.upper ?? $0.lower * 3 }
            let middle = r.map { d -> Int in
                guard !d.isFixed else { return d.lower }
                let top = d.upper ?? d.lower * 2
                let step = min(32, d.lower & -d.lower)
                let mid = (d.lower + top) / 2 / step * step
                return mid > d.lower ? mid : top
            }
            var out: [[Int]] = []
            for s in [high, middle] where s != defaultShape && !out.contains(s) { out.append(s) }
            return out
        }
    }

    /// "1, 3, 48, 32..2048" or "[1, 3, 48, 320] | [1, 3, 48, 640]".
    public var description: String {
        switch sizes {
        case .ranges(let r): return "[" + r.map(\.description).joined(separator: ", ") + "]"
        case .enumerated(let shapes): return shapes.map { "[" + $0.map(String.init).joined(separator: ", ") + "]" }.joined(separator: " | ")
        }
    }
}
