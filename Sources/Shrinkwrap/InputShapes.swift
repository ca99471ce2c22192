import Foundation
import ShrinkwrapIR

/// `--input-shape NAME=d0,d1,…`: the user pins an input's dimensions, so that
/// a model with free dims (an OCR model's width, a detector's height) can be
/// run, timed and converted to formats that need fixed shapes.
public struct InputShapePin: Sendable, Equatable {
    public var name: String
    public var dims: [Int]

    public init(name: String, dims: [Int]) {
        self.name = name
        self.dims = dims
    }

    public struct Error: UserFacingError {
        public let description: String
    }

    /// Parses `NAME=d0,d1,…` (every dim a positive integer; `x` also separates,
    /// as in `1x3x48x320`). The name may itself contain `=`: the last one splits.
    public init(parsing text: String) throws {
        guard let eq = text.lastIndex(of: "="), eq != text.startIndex else {
            throw Error(description: "--input-shape '\(text)': give NAME=d0,d1,… (e.g. x=1,3,48,320)")
        }
        let name = String(text[..<eq])
        let list = text[text.index(after: eq)...]
        if list.contains("..") || list.contains("|") {
            throw Error(description: "--input-shape '\(text)': ranges (a..b) and enumerated shapes (|) are not supported yet; give one fixed shape")
        }
        var dims: [Int] = []
        for part in list.split(whereSeparator: { $0 == "," || $0 == "x" }) {
            guard let d = Int(part.trimmingCharacters(in: .whitespaces)), d > 0 else {
                throw Error(description: "--input-shape '\(text)': '\(part)' is not a positive integer dimension")
            }
            dims.append(d)
        }
        guard !dims.isEmpty else { throw Error(description: "--input-shape '\(text)': no dimensions after '='") }
        guard checkedElementCount(dims, limit: 1 << 31) != nil else {
            throw Error(description: "--input-shape '\(text)': more than 2^31 elements")
        }
        self.init(name: name, dims: dims)
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
            let before = input.shapeDescription
            pinned.inputs[k].shape = pin.dims.map { .fixed($0) }
            let after = pinned.inputs[k].shapeDescription
            if before != after { changes.append("input '\(pin.name)' \(before) → \(after)") }
        }
        guard problems.isEmpty else {
            throw InputShapePin.Error(description: "--input-shape: " + problems.joined(separator: "; "))
        }
        graph = pinned
        return changes
    }
}
