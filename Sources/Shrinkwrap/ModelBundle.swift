import Foundation
import ShrinkwrapIR
import ShrinkwrapCoreML
import ShrinkwrapTFLite

/// ML Kit / AutoML Vision Edge model bundles: a folder holding the model,
/// its labels and a `manifest.json`
///
/// ```json
/// {"modelFile": "model.tflite", "labelsFile": "dict.txt", "modelType": "IMAGE_LABELING"}
/// ```
///
/// `Models.load` takes the folder or the manifest itself (any `.json`
/// path is read as a manifest). `modelFile` (required) and `labelsFile`
/// (optional when the model's own metadata has labels) are paths relative to
/// the manifest's folder that must stay inside it (no absolute paths, no
/// "..", no symlink leading out). The model imports as its extension says;
/// the labels file (one label per line, "\n" or "\r\n", trailing blank lines
/// ignored) replaces any labels from the model's metadata, and must have as
/// many labels as a single output's last dimension when that is fixed.
/// `modelType` is kept as the property "mlkit.modelType"; other keys are ignored.
///
/// A folder without `manifest.json` is read as a bundle too when it holds
/// exactly one model file (.tflite, .onnx, .mlmodel) and exactly one of
/// `dict.txt` / `labels.txt` beside it (how AutoML exports and many sample
/// apps ship a model); anything else is refused with what was found.
enum ModelBundle {
    static let manifestName = "manifest.json"
    static let labelFileNames = ["dict.txt", "labels.txt"]
    /// Manifests and label files larger than this are refused.
    static let textLimit = 64 << 20

    static func load(folder path: String, options: ImportOptions = ImportOptions()) throws -> Graph {
        let dir = URL(fileURLWithPath: path)
        // A Core ML package (X.mlpackage: Manifest.json and Data/): the ML Program importer.
        if dir.pathExtension.lowercased() == "mlpackage" || MLPackage.isPackage(dir),
           let format = ModelFormats.all.first(where: { $0.extensions.contains("mlpackage") }) {
            try options.check(for: format, file: path)
            return try format.importer(dir, options)
        }
        // A TensorFlow SavedModel (saved_model.pb and variables/): the TensorFlow importer.
        if FileManager.default.fileExists(atPath: dir.appendingPathComponent("saved_model.pb").path),
           let format = ModelFormats.all.first(where: { $0.name == "tensorflow" }) {
            try options.check(for: format, file: path)
            return try format.importer(dir, options)
        }
        let manifest = dir.appendingPathComponent(manifestName)
        if FileManager.default.fileExists(atPath: manifest.path) {
            return try load(manifest: manifest.path, options: options)
        }
        let names: [String]
        do { names = try FileManager.default.contentsOfDirectory(atPath: path) } catch {
            throw ImportError.unreadable(file: path, reason: "cannot list the folder: \((error as NSError).localizedDescription)")
        }
        let visible = names.filter { !$0.hasPrefix(".") }.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        let models = visible.filter { ModelFormats.format(for: URL(fileURLWithPath: $0)) != nil }
        let labels = labelFileNames.filter { visible.contains($0) }
        guard models.count == 1, labels.count == 1 else {
            let found = models.isEmpty ? "no model file" : "model files \(models.joined(separator: ", "))"
            let labelText = labels.isEmpty ? "no dict.txt / labels.txt" : labels.joined(separator: " and ")
            throw ImportError.unreadable(file: path, reason: "is a folder without \(manifestName), and not a bundle of exactly one model file and one dict.txt or labels.txt (found \(found), \(labelText))")
        }
        return try assemble(modelFile: models[0], labelsFile: labels[0], modelType: nil, folder: dir, describedBy: path, options: options)
    }

    static func load(manifest path: String, options: ImportOptions = ImportOptions()) throws -> Graph {
        func bad(_ place: String, _ reason: String) -> ImportError {
            ImportError.malformed(SourceLocation(file: path, place: place), reason: reason)
        }
        let data = try readText(path, what: "manifest")
        let object: Any
        do { object = try JSONSerialization.jsonObject(with: data) } catch {
            throw bad("", "not JSON: \((error as NSError).localizedDescription)")
        }
        guard let manifest = object as? [String: Any] else { throw bad("", "not a JSON object (an ML Kit manifest is {\"modelFile\": …, \"labelsFile\": …})") }
        func string(_ key: String, required: Bool) throws -> String? {
            guard let v = manifest[key] else {
                if required { throw bad("", "missing key \"\(key)\" (an ML Kit / AutoML manifest names its model as \"\(key)\")") }
                return nil
            }
            guard let s = v as? String, !s.isEmpty else { throw bad("\"\(key)\"", "must be a non-empty string") }
            return s
        }
        let modelFile = try string("modelFile", required: true) ?? ""
        let labelsFile = try string("labelsFile", required: false)
        let modelType = try string("modelType", required: false)
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent()
        return try assemble(modelFile: modelFile, labelsFile: labelsFile, modelType: modelType, folder: folder, describedBy: path, options: options)
    }

    /// `relative` inside `folder`, or an error naming the manifest and key.
    static func resolve(_ relative: String, key: String, in folder: URL, describedBy source: String) throws -> URL {
        let loc = SourceLocation(file: source, place: "\"\(key)\"")
        if relative.hasPrefix("/") || relative.contains("\\") || relative.split(separator: "/").contains("..") {
            throw ImportError.badExternalData(loc, reason: "path '\(relative)' escapes the bundle's folder")
        }
        let base = folder.standardizedFileURL.resolvingSymlinksInPath()
        let url = base.appendingPathComponent(relative).standardizedFileURL.resolvingSymlinksInPath()
        let basePath = base.path.hasSuffix("/") ? base.path : base.path + "/"
        guard url.path.hasPrefix(basePath) else {
            throw ImportError.badExternalData(loc, reason: "path '\(relative)' escapes the bundle's folder")
        }
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDir), !isDir.boolValue else {
            throw ImportError.badExternalData(loc, reason: "'\(relative)' is not a file in \(folder.path)")
        }
        return url
    }

    static func readText(_ path: String, what: String) throws -> Data {
        let attributes = try? FileManager.default.attributesOfItem(atPath: path)
        if let size = (attributes?[.size] as? NSNumber)?.intValue, size > textLimit {
            throw ImportError.unreadable(file: path, reason: "the \(what) is \(size) bytes, more than the \(textLimit)-byte limit")
        }
        do { return try Data(contentsOf: URL(fileURLWithPath: path)) } catch {
            throw ImportError.unreadable(file: path, reason: (error as NSError).localizedDescription)
        }
    }

    static func assemble(modelFile: String, labelsFile: String?, modelType: String?, folder: URL, describedBy source: String,
                         options: ImportOptions = ImportOptions()) throws -> Graph {
        let modelURL = try resolve(modelFile, key: "modelFile", in: folder, describedBy: source)
        guard let format = ModelFormats.format(for: modelURL), format.extensions.contains(URL(fileURLWithPath: modelFile).pathExtension.lowercased()) else {
            throw ImportError.malformed(SourceLocation(file: source, place: "\"modelFile\""),
                                        reason: "'\(modelFile)' is not a model file Shrinkwrap reads (.onnx, .mlmodel, .tflite)")
        }
        // Errors inside the model name the model file as its path in the bundle (not the symlink-resolved one).
        try options.check(for: format, file: source)
        var graph = try format.importer(folder.appendingPathComponent(modelFile), options)
        if let labelsFile {
            let labelsURL = try resolve(labelsFile, key: "labelsFile", in: folder, describedBy: source)
            let display = folder.appendingPathComponent(labelsFile).path
            let data = try readText(labelsURL.path, what: "labels file")
            guard let labels = TFLiteMetadata.labels(fromText: [UInt8](data)) else {
                throw ImportError.malformed(SourceLocation(file: display), reason: "the labels file is not UTF-8 text")
            }
            guard !labels.isEmpty else { throw ImportError.malformed(SourceLocation(file: display), reason: "the labels file has no labels") }
            if graph.outputs.count == 1, let classes = graph.outputs[0].shape?.last?.value, classes != labels.count {
                let o = graph.outputs[0]
                throw ImportError.malformed(SourceLocation(file: display),
                                            reason: "\(labels.count) labels, but the model's output '\(o.name)' \(o.shapeDescription) has \(classes) classes")
            }
            graph.metadata.labels = labels
        } else if graph.metadata.labels.isEmpty {
            throw ImportError.malformed(SourceLocation(file: source),
                                        reason: "no \"labelsFile\", and the model's metadata has no labels either (an ML Kit image labeling bundle needs them)")
        }
        if let modelType { graph.metadata.properties.append(("mlkit.modelType", modelType)) }
        return graph
    }
}
