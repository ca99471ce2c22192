import Foundation
import ShrinkwrapIR

/// The library's entry points: load, save, convert, compress (the CLI is a
/// thin layer over these). Not named after the module: a type named
/// `Shrinkwrap` inside module `Shrinkwrap` would make every module-qualified
/// name (`Shrinkwrap.ModelFormats`, `Shrinkwrap.Benchmark`) resolve against
/// the type and fail, leaving clients no way to tell our types from another
/// library's of the same name.
public enum Models {

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
    public static func checkWritable(_ path: String, inputs: [String], options: ExportOptions = ExportOptions()) throws {
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
        let refused = options.setKeys.filter { !f.exportOptions.contains($0) }
        if !refused.isEmpty {
            let takers = ModelFormats.writable.filter { w in refused.allSatisfy(w.exportOptions.contains) }.map { "." + $0.mainExtension }
            throw AtomicFile.Error(description: "\(path): \(refused.map { "--" + $0.rawValue }.joined(separator: " and ")) \(refused.count == 1 ? "is an option" : "are options") of \(takers.isEmpty ? "no format" : takers.joined(separator: ", ")) only, not .\(f.mainExtension)")
        }
    }

    /// Writes a graph in the format its extension names, atomically, and
    /// returns what was written (with its size breakdown when the exporter
    /// gives one).
    @discardableResult
    public static func save(_ graph: Graph, to path: String, inputs: [String], options: ExportOptions = ExportOptions()) throws -> ExportedModel {
        try checkWritable(path, inputs: inputs, options: options)
        let url = URL(fileURLWithPath: path)
        guard let f = ModelFormats.format(for: url), let exporter = f.exporter else {
            throw AtomicFile.Error(description: "\(path): cannot write this format")
        }
        let model = try exporter(graph, options)
        try AtomicFile.write(model, to: url, protecting: inputs.map { URL(fileURLWithPath: $0) })
        return model
    }
}
