/// One named rewrite of a `LoweringGraph` that prepares it for a format. Each
/// pass lives in its own file under `Passes/` (format-specific ones in their
/// format's target); an exporter lists the passes it needs, in order, as a
/// `LoweringPipeline`, so two exporters share a rewrite instead of copying it.
public struct LoweringPass: Sendable {
    /// Short name (`decompose-batchnorm`), for messages and docs.
    public let name: String
    /// One line: what the pass does.
    public let summary: String
    /// IR ops the pass rewrites into others (a format whose pipeline runs it
    /// can write them although its writer table lacks them), when the pass's
    /// conditions hold (constant parameters, float32 …).
    public let lowers: [String]
    private let body: @Sendable (inout LoweringGraph) throws -> Void

    public init(_ name: String, _ summary: String, lowers: [String] = [],
                _ body: @escaping @Sendable (inout LoweringGraph) throws -> Void) {
        self.name = name
        self.summary = summary
        self.lowers = lowers
        self.body = body
    }

    public func run(_ g: inout LoweringGraph) throws { try body(&g) }
}

/// The ordered passes one exporter runs before writing.
public struct LoweringPipeline: Sendable {
    public let passes: [LoweringPass]

    public init(_ passes: [LoweringPass]) { self.passes = passes }

    public var names: [String] { passes.map(\.name) }

    /// Every op some pass of the pipeline rewrites into others.
    public var loweredOps: Set<String> { Set(passes.flatMap(\.lowers)) }

    public func run(_ g: inout LoweringGraph) throws {
        for p in passes { try p.run(&g) }
    }
}

/// Permutation helpers the layout passes share.
public enum Permutation {
    /// `s` permuted: element k is `s[p[k]]`.
    public static func apply(_ p: [Int], to s: [Int]) -> [Int] { p.map { s[$0] } }

    /// The permutation that undoes `p`.
    public static func inverse(_ p: [Int]) -> [Int] {
        var q = [Int](repeating: 0, count: p.count)
        for (k, v) in p.enumerated() { q[v] = k }
        return q
    }

    /// A Transpose's permutation, when it is one (0..<rank, each once).
    public static func of(_ n: Node) -> [Int]? {
        if case .ints(let p)? = n.attributes["perm"], p.sorted() == Array(0..<p.count) { return p }
        return nil
    }

    /// NCHW → NHWC and back.
    public static let toNHWC = [0, 2, 3, 1]
    public static let toNCHW = [0, 3, 1, 2]
}
