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
    /// `options` name what the file does not say (a TensorFlow graph's inputs
    /// and outputs, a SavedModel's signature); a format that does not read
    /// one of them is an error.
    public static func load(_ path: String, options: ImportOptions = ImportOptions()) throws -> Graph {
        let url = URL(fileURLWithPath: path)
        var isDir: ObjCBool = false
        let exists = FileManager.default.fileExists(atPath: path, isDirectory: &isDir)
        if exists && isDir.boolValue { return try ModelBundle.load(folder: path, options: options) }
        let isManifest = url.pathExtension.lowercased() == "json"
        guard isManifest || ModelFormats.format(for: url) != nil else { throw ImportError.unknownFormat(file: path, expected: ModelFormats.readableExtensions) }
        guard exists else { throw ImportError.unreadable(file: path, reason: "no such file") }
        if isManifest { return try ModelBundle.load(manifest: path, options: options) }
        guard let f = ModelFormats.format(for: url) else { throw ImportError.unknownFormat(file: path, expected: ModelFormats.readableExtensions) }
        try options.check(for: f, file: path)
        return try f.importer(url, options)
    }

    /// The bytes a model is made of, for its size and digest in reports: a
    /// file's, or a package folder's files in path order (each preceded by
    /// its relative path).
    public static func sourceBytes(_ path: String) throws -> Data {
        let url = URL(fileURLWithPath: path)
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDir), isDir.boolValue else {
            return try Data(contentsOf: url, options: .mappedIfSafe)
        }
        guard let walker = FileManager.default.enumerator(atPath: path) else { return Data() }
        var files: [String] = []
        for case let rel as String in walker {
            var d: ObjCBool = false
            if FileManager.default.fileExists(atPath: url.appendingPathComponent(rel).path, isDirectory: &d), !d.boolValue { files.append(rel) }
        }
        var out = Data()
        for rel in files.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
            out.append(Data(rel.utf8))
            out.append(try Data(contentsOf: url.appendingPathComponent(rel), options: .mappedIfSafe))
        }
        return out
    }

    /// Bytes on disk of a model file or package folder.
    public static func sourceSize(_ path: String) throws -> Int {
        let url = URL(fileURLWithPath: path)
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDir), isDir.boolValue else {
            return (try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.intValue ?? 0
        }
        var total = 0
        guard let walker = FileManager.default.enumerator(atPath: path) else { return 0 }
        for case let rel as String in walker {
            let attrs = try? FileManager.default.attributesOfItem(atPath: url.appendingPathComponent(rel).path)
            if attrs?[.type] as? FileAttributeType == .typeRegular { total += (attrs?[.size] as? NSNumber)?.intValue ?? 0 }
        }
        return total
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
