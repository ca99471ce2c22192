import Foundation
import ShrinkwrapIR
import ShrinkwrapCoreML
import ShrinkwrapONNX
import ShrinkwrapTFLite
import ShrinkwrapRuntime

/// A model file format Shrinkwrap reads and writes.
public struct ModelFormat: Sendable {
    /// Short name, e.g. "onnx".
    public let name: String
    /// The format's full name, e.g. "Core ML NeuralNetwork".
    public let title: String
    /// File extensions, lowercase, without the dot.
    public let extensions: [String]
    /// Imports a file of this format.
    public let importer: @Sendable (URL) throws -> Graph
    /// Ops (in the format's own vocabulary) the importer accepts.
    public let supportedOps: [String]
    /// Serializes a graph to this format (nil for a format without an exporter).
    public let exporter: (@Sendable (Graph) throws -> ExportedModel)?
    /// IR ops the exporter can write.
    public let exportedOps: [String]
    /// How the exporter stores compressed weights, in one line.
    public let weightStorage: String
}

/// A serialized model, with what its bytes are made of when the exporter says.
public struct ExportedModel: Sendable {
    public var data: Data
    /// "N bytes = W compressed weight bytes + G graph bytes (…)", when known.
    public var sizeSummary: String?
    public init(data: Data, sizeSummary: String? = nil) {
        self.data = data; self.sizeSummary = sizeSummary
    }
}

/// The format registry: one line per format.
public enum ModelFormats {
    public static let all: [ModelFormat] = [
        ModelFormat(name: "onnx", title: "ONNX", extensions: ["onnx"], importer: { try ONNXImporter.importModel(at: $0) },
                    supportedOps: ONNXImporter.supportedOps,
                    exporter: { g in
                        let (data, layout) = try ONNXExporter.exportWithLayout(ModelFormats.typingOutputs(g))
                        return ExportedModel(data: data, sizeSummary: layout.summary)
                    },
                    exportedOps: ONNXExporter.supportedOps.filter { OpTable[$0] != nil },  // IR ops (import-only forms like Upsample are not)
                    weightStorage: ONNXExporter.weightStorage),
        ModelFormat(name: "coreml", title: CoreMLExporter.format, extensions: ["mlmodel"], importer: { try CoreMLImporter.importModel(at: $0) },
                    supportedOps: CoreMLImporter.supportedLayers,
                    exporter: { ExportedModel(data: try CoreMLExporter.export(try ExportPreparation.prepare($0).graph)) },
                    exportedOps: CoreMLExporter.supportedOps, weightStorage: CoreMLExporter.weightStorage),
        ModelFormat(name: "tflite", title: TFLiteExporter.format, extensions: ["tflite"], importer: { try TFLiteImporter.importModel(at: $0) },
                    supportedOps: TFLiteImporter.supportedOps,
                    exporter: { ExportedModel(data: try TFLiteExporter.export(try ExportPreparation.prepare($0).graph)) },
                    exportedOps: TFLiteExporter.supportedOps, weightStorage: TFLiteExporter.weightStorage),
    ]

    /// ONNX needs a type and a rank for every graph output; an imported graph
    /// may not know them (a Core ML output without a shape). They come from one
    /// run of the shape annotation, the dimensions left free.
    static func typingOutputs(_ g: Graph) -> Graph {
        guard g.outputs.contains(where: { $0.dtype == nil || $0.shape == nil }),
              let prepared = try? ExportPreparation.prepare(g).graph else { return g }
        var out = g
        for k in out.outputs.indices where out.outputs[k].dtype == nil || out.outputs[k].shape == nil {
            guard let p = prepared.outputs.first(where: { $0.name == out.outputs[k].name }) else { continue }
            if out.outputs[k].dtype == nil { out.outputs[k].dtype = p.dtype }
            if out.outputs[k].shape == nil, let shape = p.shape { out.outputs[k].shape = shape.map { _ in .unknown } }
        }
        return out
    }

    /// The format for a path, by extension.
    public static func format(for url: URL) -> ModelFormat? {
        let ext = url.pathExtension.lowercased()
        return all.first { $0.extensions.contains(ext) }
    }
}

/// Library entry points used by the CLI.
public enum Shrinkwrap {
    public static let version = "0.1.0"

    /// Loads a model of any registered format, or an ML Kit / AutoML Vision
    /// Edge bundle: a folder, or its manifest.json (see `ModelBundle`).
    public static func load(_ path: String) throws -> Graph {
        let url = URL(fileURLWithPath: path)
        var isDir: ObjCBool = false
        let exists = FileManager.default.fileExists(atPath: path, isDirectory: &isDir)
        if exists && isDir.boolValue { return try ModelBundle.load(folder: path) }
        let isManifest = url.pathExtension.lowercased() == "json"
        guard isManifest || ModelFormats.format(for: url) != nil else { throw ImportError.unknownFormat(file: path) }
        guard exists else { throw ImportError.unreadable(file: path, reason: "no such file") }
        if isManifest { return try ModelBundle.load(manifest: path) }
        guard let f = ModelFormats.format(for: url) else { throw ImportError.unknownFormat(file: path) }
        return try f.importer(url)
    }

    /// Fails early when `path` names no format with an exporter, or an input.
    public static func checkWritable(_ path: String, inputs: [String]) throws {
        let url = URL(fileURLWithPath: path)
        let names = ModelFormats.all.filter { $0.exporter != nil }.map { "." + ($0.extensions.first ?? $0.name) }
        guard let f = ModelFormats.format(for: url), f.exporter != nil else {
            let known = names.isEmpty ? "no exporter is available yet" : "writable: \(names.joined(separator: ", "))"
            throw AtomicFile.Error(description: "\(path): cannot write this format (\(known))")
        }
        let target = url.standardizedFileURL.resolvingSymlinksInPath().path
        for i in inputs where URL(fileURLWithPath: i).standardizedFileURL.resolvingSymlinksInPath().path == target {
            throw AtomicFile.Error(description: "\(path): refusing to overwrite an input file")
        }
    }

    /// Writes a graph in the format its extension names, atomically, and
    /// returns what was written (with its size breakdown when the exporter
    /// gives one).
    @discardableResult
    public static func save(_ graph: Graph, to path: String, inputs: [String]) throws -> ExportedModel {
        try checkWritable(path, inputs: inputs)
        let url = URL(fileURLWithPath: path)
        guard let f = ModelFormats.format(for: url), let exporter = f.exporter else {
            throw AtomicFile.Error(description: "\(path): cannot write this format")
        }
        let model = try exporter(graph)
        try AtomicFile.write(model.data, to: url, protecting: inputs.map { URL(fileURLWithPath: $0) })
        return model
    }
}

/// Writes files atomically: a temporary file in the target folder, then a
/// rename. Refuses to overwrite any path given as an input.
public enum AtomicFile {
    public struct Error: UserFacingError {
        public let description: String
    }

    public static func write(_ data: Data, to url: URL, protecting inputs: [URL] = []) throws {
        let target = url.standardizedFileURL.resolvingSymlinksInPath()
        for i in inputs where i.standardizedFileURL.resolvingSymlinksInPath().path == target.path {
            throw Error(description: "\(url.path): refusing to overwrite an input file")
        }
        let dir = url.deletingLastPathComponent()
        do {
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        } catch {
            throw Error(description: "\(dir.path): cannot create folder: \((error as NSError).localizedDescription)")
        }
        let tmp = dir.appendingPathComponent(".\(url.lastPathComponent).tmp-\(ProcessInfo.processInfo.processIdentifier)")
        do {
            try data.write(to: tmp)
            // rename(2) replaces an existing file atomically (FileManager.replaceItemAt fails on Linux
            // when the destination exists: "The file doesn't exist").
            if rename(tmp.path, url.path) != 0 {
                let reason = String(cString: strerror(errno))
                try? FileManager.default.removeItem(at: tmp)
                throw Error(description: "\(url.path): cannot write: \(reason)")
            }
        } catch let e as Error {
            throw e
        } catch {
            try? FileManager.default.removeItem(at: tmp)
            throw Error(description: "\(url.path): cannot write: \((error as NSError).localizedDescription)")
        }
    }
}
