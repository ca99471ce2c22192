import Foundation
import ShrinkwrapIR

/// How to read a model beyond its bytes, for formats whose files do not say
/// it all: a TensorFlow graph's inputs and outputs (tf-coreml asked for them
/// by name) and a SavedModel's signature. A format lists the options its
/// importer reads (`ModelFormat.importOptions`); `Models.load` refuses the
/// others, so an option is never silently ignored.
public struct ImportOptions: Sendable, Equatable {
    /// Tensors to read as the graph's inputs ("name" or "name:0"; a signature's keys too).
    public var inputs: [String]?
    /// Tensors to read as the graph's outputs.
    public var outputs: [String]?
    /// The SavedModel signature (TensorFlow's default: serving_default).
    public var signature: String?

    public init(inputs: [String]? = nil, outputs: [String]? = nil, signature: String? = nil) {
        self.inputs = inputs; self.outputs = outputs; self.signature = signature
    }

    public enum Key: String, Sendable, CaseIterable {
        case inputs, outputs, signature
        /// The command-line flag that sets it.
        public var flag: String { "--\(rawValue)" }
    }

    /// The options given, in `Key` order.
    public var given: [Key] {
        Key.allCases.filter { k in
            switch k {
            case .inputs: return inputs != nil
            case .outputs: return outputs != nil
            case .signature: return signature != nil
            }
        }
    }

    /// These options for the model at `path` when its format reads them all,
    /// else none (a command reading two models of different formats).
    public func applying(to path: String) -> ImportOptions {
        let url = URL(fileURLWithPath: path)
        let savedModel = FileManager.default.fileExists(atPath: url.appendingPathComponent("saved_model.pb").path)
        let format = savedModel ? ModelFormats.all.first { $0.name == "tensorflow" } : ModelFormats.format(for: url)
        guard let format, given.allSatisfy(format.importOptions.contains) else { return ImportOptions() }
        return self
    }

    /// Refuses options `format` does not read, naming the ones given and the formats that read them.
    func check(for format: ModelFormat, file: String) throws {
        let unread = given.filter { !format.importOptions.contains($0) }
        guard let first = unread.first else { return }
        let readers = ModelFormats.all.filter { $0.importOptions.contains(first) }.map(\.title)
        throw ImportError.unsupported(SourceLocation(file: file),
                                      what: "\(unread.map(\.flag).joined(separator: ", ")) for \(format.title) (read for: \(readers.isEmpty ? "no format" : readers.joined(separator: ", ")))")
    }
}
