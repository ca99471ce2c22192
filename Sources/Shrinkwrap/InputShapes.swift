import Foundation
import ShrinkwrapIR

/// `--input-shape NAME=d0,d1,…`: the user pins an input's dimensions, so that
/// a model with free dims (an OCR model's width, a detector's height) can be
/// run, timed and converted to formats that need fixed shapes.
public struct InputShapePin: Sendable, Equatable {
    public var name: String
    /// The shape the graph is pinned to (with flexible `sizes`: their default).
    public var dims: [Int]
    /// Ranges or enumerated shapes the input may also take; nil: `dims` only.
    public var sizes: FlexibleShape.Sizes?

    public init(name: String, dims: [Int], sizes: FlexibleShape.Sizes? = nil) {
        self.name = name
        self.dims = dims
        self.sizes = sizes
    }

    public struct Error: UserFacingError {
        public let description: String
    }

    /// Parses `NAME=d0,d1,…` (every dim a positive integer; `x` also separates,
    /// as in `1x3x48x320`), with a range `a..b` (or `a..`, unbounded) for any
    /// dim, or several whole shapes separated by `|`. The name may itself
    /// contain `=`: the last one splits.
    public init(parsing text: String) throws {
        guard let eq = text.lastIndex(of: "="), eq != text.startIndex else {
            throw Error(description: "--input-shape '\(text)': give NAME=d0,d1,… (e.g. x=1,3,48,320, x=1,3,48,32..2048 or x=1,3,48,320|1,3,48,640)")
        }
        let name = String(text[..<eq])
        let list = String(text[text.index(after: eq)...])
        func fail(_ why: String) -> Error { Error(description: "--input-shape '\(text)': \(why)") }
        func size(_ part: Substring) throws -> Int {
            guard let d = Int(part.trimmingCharacters(in: .whitespaces)), d > 0 else {
                throw fail("'\(part)' is not a positive integer dimension")
            }
            return d
        }
        func dims(_ shape: Substring) throws -> [FlexibleShape.SizeRange] {
            var out: [FlexibleShape.SizeRange] = []
            for part in shape.split(whereSeparator: { $0 == "," || $0 == "x" }) {
                if let dots = part.range(of: "..") {
                    let lower = try size(part[..<dots.lowerBound])
                    let rest = part[dots.upperBound...]
                    let upper = rest.trimmingCharacters(in: .whitespaces).isEmpty ? nil : try size(rest)
                    if let upper, upper < lower { throw fail("range \(part) is empty") }
                    out.append(.init(lower: lower, upper: upper))
                } else {
                    let d = try size(part)
                    out.append(.init(lower: d, upper: d))
                }
            }
            guard !out.isEmpty else { throw fail("no dimensions") }
            return out
        }
        let shapes = try list.split(separator: "|", omittingEmptySubsequences: false).map(dims)
        var sizes: FlexibleShape.Sizes?
        if shapes.count > 1 {
            guard shapes.allSatisfy({ $0.allSatisfy(\.isFixed) }) else { throw fail("give either ranges (a..b) or whole shapes separated by |, not both") }
            let fixed = shapes.map { $0.map(\.lower) }
            guard Set(fixed.map(\.count)).count == 1 else { throw fail("the shapes separated by | have different ranks") }
            var distinct: [[Int]] = []
            for s in fixed where !distinct.contains(s) { distinct.append(s) }
            sizes = distinct.count > 1 ? .enumerated(distinct) : nil
        } else if let only = shapes.first, !only.allSatisfy(\.isFixed) {
            sizes = .ranges(only)
        }
        let shape = shapes.first?.map(\.lower) ?? []
        for s in shapes.map({ $0.map { $0.upper ?? $0.lower } }) where checkedElementCount(s, limit: 1 << 31) == nil {
            throw fail("more than 2^31 elements")
        }
        self.init(name: name, dims: shape, sizes: sizes)
    }
}

extension Models {
    /// Sets each pinned input's shape. Every pin must name a runtime input once,
    /// with the input's rank (when known) and its fixed dims unchanged; all
    /// problems are listed at once. Returns one line per changed input for the
    /// user: "input 'x' [1, 3, ?, ?] → [1, 3, 48, 320]".
    @discardableResult
    public static func pin(_ pins: [InputShapePin], in graph: inout Graph) throws -> [String] {
        var pinned = graph  // changed only when every pin is right
        var problems: [String] = []
        var changes: [String] = []
        var seen = Set<String>()
        let names = pinned.runtimeInputs.map(\.name)
        for pin in pins {
            guard seen.insert(pin.name).inserted else {
                problems.append("'\(pin.name)' is pinned twice")
                continue
            }
            guard let k = pinned.inputs.firstIndex(where: { $0.name == pin.name }), !pinned.isConstant(pin.name) else {
                problems.append("the model has no input '\(pin.name)' (inputs: \(names.map { "'\($0)'" }.joined(separator: ", ")))")
                continue
            }
            let input = pinned.inputs[k]
            if let shape = input.shape {
                guard shape.count == pin.dims.count else {
                    problems.append("input '\(pin.name)' has rank \(shape.count) (\(input.shapeDescription)); \(pin.dims.count) dims given")
                    continue
                }
                let clashes = zip(shape, pin.dims).enumerated().compactMap { axis, pair -> String? in
                    if case .fixed(let d) = pair.0, d != pair.1 { return "axis \(axis) is \(d), not \(pair.1)" }
                    return nil
                }
                guard clashes.isEmpty else {
                    problems.append("input '\(pin.name)' \(input.shapeDescription): \(clashes.joined(separator: ", "))")
                    continue
                }
            }
            if case .ranges(let ranges)? = pin.sizes, let fixed = input.shape {
                let axes = zip(fixed, ranges).enumerated().filter { if case .fixed = $0.element.0 { return !$0.element.1.isFixed }; return false }
                guard axes.isEmpty else {
                    problems.append("input '\(pin.name)' \(input.shapeDescription): axis \(axes.map { String($0.offset) }.joined(separator: ", ")) is fixed and cannot take a range")
                    continue
                }
            }
            if case .enumerated(let shapes)? = pin.sizes, let fixed = input.shape {
                let clashes = shapes.filter { s in zip(fixed, s).contains { if case .fixed(let d) = $0.0 { return d != $0.1 }; return false } }
                guard clashes.isEmpty else {
                    let listed = clashes.map { "[" + $0.map(String.init).joined(separator: ", ") + "]" }.joined(separator: ", ")
                    problems.append("input '\(pin.name)' \(input.shapeDescription): \(listed) changes a fixed dimension")
                    continue
                }
            }
            let before = input.shapeDescription
            pinned.inputs[k].shape = pin.dims.map { .fixed($0) }
            let after = pinned.inputs[k].shapeDescription
            pinned.metadata.flexibleShapes.removeAll { $0.input == pin.name }
            if let sizes = pin.sizes {
                let flexible = FlexibleShape(input: pin.name, sizes: sizes, original: input.shape)
                pinned.metadata.flexibleShapes.append(flexible)
                changes.append("input '\(pin.name)' \(before) → \(after), and may take \(flexible.description)")
            } else if before != after {
                changes.append("input '\(pin.name)' \(before) → \(after)")
            }
        }
        guard problems.isEmpty else {
            throw InputShapePin.Error(description: "--input-shape: " + problems.joined(separator: "; "))
        }
        graph = pinned
        return changes
    }
}
