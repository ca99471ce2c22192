import Foundation
import ShrinkwrapIR
import ShrinkwrapRuntime

/// Running a model on named inputs: the library side of `shrinkwrap run`.
public enum ModelRunner {
    /// Loads .npy inputs given as `NAME=FILE` or, for a single-input model, `FILE`.
    public static func loadInputs(_ specs: [String], graph: Graph) throws -> [String: Tensor] {
        let inputs = graph.runtimeInputs
        var out: [String: Tensor] = [:]
        for spec in specs {
            var name: String
            var path: String
            if let eq = spec.firstIndex(of: "="), inputs.contains(where: { $0.name == String(spec[..<eq]) }) {
                name = String(spec[..<eq])
                path = String(spec[spec.index(after: eq)...])
            } else {
                guard inputs.count == 1 else {
                    throw RunError(description: "'\(spec)': the model has \(inputs.count) inputs (\(inputs.map(\.name).joined(separator: ", "))); use NAME=FILE.npy")
                }
                name = inputs[0].name
                path = spec
            }
            if out[name] != nil { throw RunError(description: "input '\(name)' is given twice") }
            let t = try NPY.read(URL(fileURLWithPath: path))
            guard let info = inputs.first(where: { $0.name == name }) else {
                throw RunError(description: "the model has no input '\(name)'")
            }
            do { try Interpreter.check(t, against: info) } catch let e as KernelError {
                throw RunError(description: "\(path): \(e.description)")
            }
            out[name] = t
        }
        for i in inputs where out[i.name] == nil {
            throw RunError(description: "missing input '\(i.name)' (\(i.dtype?.rawValue ?? "?") \(i.shapeDescription)); pass --input \(i.name)=FILE.npy")
        }
        return out
    }

    public struct RunError: Error, CustomStringConvertible { public let description: String }

    /// The top-k entries of a classifier-like output, or nil when the output
    /// does not look like class scores (float, one row of ≥ 2 values).
    public static func topK(_ t: Tensor, k: Int = 5) -> [(index: Int, score: Float)]? {
        guard let f = t.floats, f.count >= 2 else { return nil }
        let rows = t.shape.dropLast().reduce(1, *)
        guard rows == 1 else { return nil }
        let order = f.indices.sorted { f[$0] != f[$1] ? f[$0] > f[$1] : $0 < $1 }
        return order.prefix(k).map { ($0, f[$0]) }
    }

    /// A file name for an output value: characters other than letters,
    /// digits, '-', '_' and '.' become '_'.
    public static func fileName(for name: String) -> String {
        let s = String(name.map { $0.isLetter || $0.isNumber || "-_.".contains($0) ? $0 : "_" })
        return s.isEmpty ? "output" : s
    }
}
