import Foundation
import ShrinkwrapIR

/// `--input-value NAME=v0,v1,…`: the user fixes an input's value, and the
/// input becomes a constant of the graph. A model that picks a branch from an
/// input (silero-vad's `sr`: 16 kHz or 8 kHz) then has a constant condition,
/// and exporters without control flow get the branch it takes
/// (`Graph.foldingConstantBranches`).
public struct InputValuePin: Sendable, Equatable {
    public var name: String
    public var values: [Double]

    public init(name: String, values: [Double]) {
        self.name = name
        self.values = values
    }

    public struct Error: UserFacingError {
        public let description: String
    }

    /// Parses `NAME=v0,v1,…` (numbers; `true` / `false` for bool inputs). The name may contain `=`: the last one splits.
    public init(parsing text: String) throws {
        guard let eq = text.lastIndex(of: "="), eq != text.startIndex else {
            throw Error(description: "--input-value '\(text)': give NAME=v0,v1,… (e.g. sr=16000)")
        }
        var values: [Double] = []
        for part in text[text.index(after: eq)...].split(separator: ",") {
            let word = part.trimmingCharacters(in: .whitespaces).lowercased()
            if word == "true" || word == "false" { values.append(word == "true" ? 1 : 0); continue }
            guard let v = Double(word), v.isFinite else {
                throw Error(description: "--input-value '\(text)': '\(part)' is not a finite number")
            }
            values.append(v)
        }
        guard !values.isEmpty else { throw Error(description: "--input-value '\(text)': no values after '='") }
        guard values.count <= 1 << 20 else { throw Error(description: "--input-value '\(text)': more than 2^20 values") }
        self.init(name: String(text[..<eq]), values: values)
    }

    /// The tensor for `input`: its declared type, its shape when fixed (a scalar for one value when the rank is unknown).
    func tensor(for input: ValueInfo) throws -> Tensor {
        let dtype = input.dtype ?? .float32
        let shape: [Int]
        if let s = input.staticShape {
            shape = s
        } else if input.shape == nil && values.count == 1 {
            shape = []
        } else {
            throw Error(description: "--input-value \(name): input '\(name)' has shape \(input.shapeDescription); pin its dims with --input-shape first")
        }
        guard checkedElementCount(shape, limit: values.count) == values.count else {
            throw Error(description: "--input-value \(name): input '\(name)' \(input.shapeDescription) holds \(shape.reduce(1, *)) values, \(values.count) given")
        }
        if dtype == .bool { return Tensor(bools: values.map { $0 != 0 }, shape: shape) }
        if dtype.isFloatingPoint { return Tensor(values.map { Float($0) }, shape: shape, dtype: dtype) }
        let ints = values.compactMap { Int64(exactly: $0) }
        guard ints.count == values.count else {
            throw Error(description: "--input-value \(name): input '\(name)' is \(dtype); give whole numbers")
        }
        return Tensor(ints: ints, shape: shape, dtype: dtype)
    }
}

extension Models {
    /// Makes each pinned input a constant (after `pin(_:in:)` for shapes). Every
    /// pin must name a runtime input once; all problems are listed at once and
    /// nothing changes unless all are right. Returns one line per input for the user.
    @discardableResult
    public static func pinValues(_ pins: [InputValuePin], in graph: inout Graph) throws -> [String] {
        var pinned = graph
        var problems: [String] = []
        var lines: [String] = []
        var seen = Set<String>()
        for pin in pins {
            guard seen.insert(pin.name).inserted else { problems.append("'\(pin.name)' is given twice"); continue }
            guard let k = pinned.inputs.firstIndex(where: { $0.name == pin.name }), !pinned.isConstant(pin.name) else {
                let names = pinned.runtimeInputs.map { "'\($0.name)'" }.joined(separator: ", ")
                problems.append("the model has no input '\(pin.name)' (inputs: \(names))")
                continue
            }
            do {
                let t = try pin.tensor(for: pinned.inputs[k])
                pinned.inputs.remove(at: k)
                pinned.setConstant(Constant(name: pin.name, tensor: t))
                let shown = pin.values.prefix(4).map { Int64(exactly: $0).map(String.init) ?? String($0) }.joined(separator: ", ")
                lines.append("input '\(pin.name)' is now the constant \(t.dtype) \(t.shape) [\(shown)\(pin.values.count > 4 ? ", …" : "")]")
            } catch let e as InputValuePin.Error {
                problems.append(e.description.replacingOccurrences(of: "--input-value \(pin.name): ", with: ""))
            }
        }
        guard problems.isEmpty else {
            throw InputValuePin.Error(description: "--input-value: " + problems.joined(separator: "; "))
        }
        graph = pinned
        return lines
    }
}
