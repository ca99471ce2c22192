import Foundation
import ShrinkwrapData
import ShrinkwrapIR
import ShrinkwrapRuntime

/// Running a model on named inputs: the library side of `shrinkwrap run`.
public enum ModelRunner {
    /// The input of a single-input text model for one sentence (see `Vocabulary.encode`), tokenized with
    /// `options.vocabulary`, else the vocabulary kept in the model's metadata (`Vocabulary.fromMetadata`).
    public static func textInput(_ sentence: String, graph: Graph, options: DataOptions) throws -> [String: Tensor] {
        let inputs = graph.runtimeInputs
        guard inputs.count == 1 else {
            throw RunError(description: "--text feeds a model with one input; this one has \(inputs.count) (\(inputs.map(\.name).joined(separator: ", ")))")
        }
        let samples = try TextData.tensors(fromText: sentence.replacingOccurrences(of: "\n", with: " "), display: "--text", for: inputs[0],
                                           vocabulary: try options.vocabulary ?? Vocabulary.fromMetadata(graph), sequenceLength: options.sequenceLength)
        guard let t = samples.first?.tensor else { throw RunError(description: "--text is empty") }
        return [inputs[0].name: t]
    }

    /// Loads .npy or image (PNG / JPEG, prepared by `options.image`) inputs
    /// given as `NAME=FILE` or, for a single-input model, `FILE`.
    public static func loadInputs(_ specs: [String], graph: Graph, options: DataOptions = DataOptions()) throws -> [String: Tensor] {
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
            guard let info = inputs.first(where: { $0.name == name }) else {
                throw RunError(description: "the model has no input '\(name)'")
            }
            let t: Tensor
            if InputData.kind(of: path) == .image {
                t = try InputData.convert(ImageData.tensor(fromFile: URL(fileURLWithPath: path), display: path, for: info, graph: graph,
                                                           options: options.image), to: info, file: path)
            } else {
                let read = try NPY.read(URL(fileURLWithPath: path))
                // float16 values for a float32 input widen exactly; other dtypes must match.
                t = [.float16, .bfloat16].contains(read.dtype) && info.dtype == .float32 ? try InputData.convert(read, to: info, file: path) : read
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

    /// Seeded uniform [0, 1) inputs (small integers for integer inputs) for
    /// every runtime input; dimensions that are not fixed become 1.
    public static func syntheticInputs(graph: Graph, seed: UInt64) throws -> [String: Tensor] {
        var rng = SeededGenerator(seed: seed)
        func next() -> UInt64 { rng.next() }
        var out: [String: Tensor] = [:]
        for i in graph.runtimeInputs {
            let shape = (i.shape ?? []).map { $0.value ?? 1 }
            guard let n = checkedElementCount(shape, limit: 1 << 28) else {
                throw RunError(description: "input '\(i.name)' shape \(shape) is too large")
            }
            let dtype = i.dtype ?? .float32
            if dtype.isFloatingPoint {
                out[i.name] = Tensor((0..<n).map { _ in Float(next() >> 40) / Float(1 << 24) }, shape: shape, dtype: dtype)
            } else if dtype == .bool {
                out[i.name] = Tensor(bools: (0..<n).map { _ in next() & 1 == 1 }, shape: shape)
            } else {
                out[i.name] = Tensor(ints: (0..<n).map { _ in Int64(next() % 4) }, shape: shape, dtype: dtype)
            }
        }
        return out
    }

    public struct RunError: UserFacingError { public let description: String }

    /// The top-k entries of a classifier-like output, or nil when the output
    /// does not look like class scores: float, exactly one axis longer than 1,
    /// and not the leading (batch) axis of a tensor of rank ≥ 2 — [1000],
    /// [1, 1000] and [1, 1000, 1, 1] are scores; [5, 1] is five samples of a
    /// regression.
    public static func topK(_ t: Tensor, k: Int = 5) -> [(index: Int, score: Float)]? {
        guard let f = t.floats, f.count >= 2,
              let axis = t.shape.firstIndex(where: { $0 > 1 }),
              t.shape.filter({ $0 > 1 }).count == 1, axis > 0 || t.shape.count == 1 else { return nil }
        let order = f.indices.sorted { f[$0] != f[$1] ? f[$0] > f[$1] : $0 < $1 }
        return order.prefix(k).map { ($0, f[$0]) }
    }

    /// The first `limit` values of an output, flattened, for printing
    /// ("-2.99921 -0.99921 0.00079", then "… (N values)" when there are more).
    public static func valuePreview(_ t: Tensor, limit: Int = 8) -> String {
        let shown: [String]
        if let f = t.floats {
            shown = f.prefix(limit).map { String(format: "%g", $0) }
        } else if let i = t.ints {
            shown = i.prefix(limit).map { String($0) }
        } else {
            return "(\(t.dtype) values not shown)"
        }
        return shown.joined(separator: " ") + (t.count > limit ? " … (\(t.count) values)" : "")
    }

    /// A file name for an output value: characters other than letters,
    /// digits, '-', '_' and '.' become '_'.
    public static func fileName(for name: String) -> String {
        let s = String(name.map { $0.isLetter || $0.isNumber || "-_.".contains($0) ? $0 : "_" })
        return s.isEmpty ? "output" : s
    }
}
