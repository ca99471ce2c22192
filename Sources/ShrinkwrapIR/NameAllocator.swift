/// Hands out names nobody holds yet: every importer, pass, planner and writer
/// that invents a value, node, layer or blob name asks one of these, so the
/// rule for a fresh name lives here once.
public struct NameAllocator: Sendable {
    /// How a taken base name is made free.
    public enum Style: Sendable, Equatable {
        /// `base` itself when free, else the first free of `base_1`, `base_2`, …
        case suffixed
        /// Always `base` + separator + a counter shared by every base
        /// (`x__1`, `w__2`, …), the counter moving on past taken names.
        /// For names that must read as invented (`conv__sw3`).
        case numbered(separator: String)
    }

    public let style: Style
    public private(set) var taken: Set<String>
    private var counter = 0

    /// An allocator for which `taken` names are not free.
    public init(_ style: Style = .suffixed, taken: some Sequence<String> = [String]()) {
        self.style = style
        self.taken = Set(taken)
    }

    /// An allocator that leaves every name `graph` uses alone: node names,
    /// node inputs and outputs, constants, graph inputs and outputs,
    /// in the graph and its subgraphs.
    public init(_ style: Style = .suffixed, reserving graph: Graph) {
        self.init(style, taken: graph.allNames)
    }

    /// A free name made from `base`; it is taken from now on.
    public mutating func fresh(_ base: String) -> String {
        var name: String
        switch style {
        case .suffixed:
            name = base
            var k = 1
            while taken.contains(name) { name = "\(base)_\(k)"; k += 1 }
        case .numbered(let separator):
            repeat {
                counter += 1
                name = "\(base)\(separator)\(counter)"
            } while taken.contains(name)
        }
        taken.insert(name)
        return name
    }

    /// Marks `name` as taken (a name the caller chose itself).
    public mutating func reserve(_ name: String) { taken.insert(name) }

    /// Marks every name as taken.
    public mutating func reserve(_ names: some Sequence<String>) { taken.formUnion(names) }

    /// Whether `name` is taken.
    public func isTaken(_ name: String) -> Bool { taken.contains(name) }
}
