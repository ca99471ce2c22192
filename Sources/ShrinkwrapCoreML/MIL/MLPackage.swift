import Foundation
import ShrinkwrapIR

/// A Core ML model package (`.mlpackage`), the folder coremltools writes:
///
/// ```
/// X.mlpackage/
///   Manifest.json
///   Data/com.apple.CoreML/model.mlmodel      the Model message (mlProgram)
///   Data/com.apple.CoreML/weights/weight.bin blob storage (MILBlob)
/// ```
///
/// `Manifest.json` holds `fileFormatVersion` ("1.0.0"), `itemInfoEntries`
/// (identifier → author, description, name, path relative to `Data/`) and
/// `rootModelIdentifier` (the entry of the model file). A program names a
/// blob file as "@model_path/weights/weight.bin": relative to the folder of
/// the model file.
public enum MLPackage {
    public static let manifestName = "Manifest.json"
    public static let modelPath = "com.apple.CoreML/model.mlmodel"
    public static let weightsPath = "com.apple.CoreML/weights"
    public static let weightFileName = "weight.bin"
    /// What a program writes for the folder of its model file.
    public static let modelPathPrefix = "@model_path/"
    /// Manifests larger than this are refused.
    static let manifestLimit = 1 << 20

    /// The files of a package, relative to its folder, in writing order.
    public static func files(model: Data, weights: [UInt8]) -> [(path: String, data: Data)] {
        let modelID = identifier(for: modelPath, content: model)
        let weightsID = identifier(for: weightsPath, content: Data(weights))
        func entry(_ id: String, _ description: String, _ name: String, _ path: String) -> String {
            """
                    "\(id)": {
                        "author": "com.apple.CoreML",
                        "description": "\(description)",
                        "name": "\(name)",
                        "path": "\(path)"
                    }
            """
        }
        let entries = [(modelID, entry(modelID, "CoreML Model Specification", "model.mlmodel", modelPath)),
                       (weightsID, entry(weightsID, "CoreML Model Weights", "weights", weightsPath))]
            .sorted { $0.0 < $1.0 }.map(\.1)
        let manifest = """
        {
            "fileFormatVersion": "1.0.0",
            "itemInfoEntries": {
        \(entries.joined(separator: ",\n"))
            },
            "rootModelIdentifier": "\(modelID)"
        }

        """
        return [(manifestName, Data(manifest.utf8)),
                ("Data/" + modelPath, model),
                ("Data/" + weightsPath + "/" + weightFileName, Data(weights))]
    }

    /// An item identifier in UUID form derived from the item's path and
    /// bytes (two 64-bit FNV-1a hashes): the same package gives the same
    /// manifest, and different items get different identifiers.
    static func identifier(for path: String, content: Data) -> String {
        var h1: UInt64 = 0xcbf2_9ce4_8422_2325, h2: UInt64 = 0x8422_2325_cbf2_9ce4 ^ UInt64(content.count)
        func mix(_ b: UInt8) {
            h1 = (h1 ^ UInt64(b)) &* 0x0000_0100_0000_01B3
            h2 = (h2 ^ UInt64(b ^ 0x5A)) &* 0x0000_0100_0000_01B3
        }
        for b in path.utf8 { mix(b) }
        mix(0)
        content.withUnsafeBytes { for b in $0 { mix(b) } }
        let hex = String(format: "%016llX%016llX", h1, h2)
        let c = Array(hex)
        return [c[0..<8], c[8..<12], c[12..<16], c[16..<20], c[20..<32]].map { String($0) }.joined(separator: "-")
    }

    /// Whether `folder` looks like a model package (a manifest and a Data folder).
    public static func isPackage(_ folder: URL) -> Bool {
        FileManager.default.fileExists(atPath: folder.appendingPathComponent(manifestName).path)
            && FileManager.default.fileExists(atPath: folder.appendingPathComponent("Data").path)
    }

    /// The model file a package's manifest names as its root, checked to stay
    /// inside the package.
    public static func rootModel(of folder: URL) throws -> URL {
        let manifestURL = folder.appendingPathComponent(manifestName)
        let file = manifestURL.path
        func bad(_ place: String, _ reason: String) -> ImportError {
            ImportError.malformed(SourceLocation(file: file, place: place), reason: reason)
        }
        let size = (try? FileManager.default.attributesOfItem(atPath: file)[.size] as? NSNumber)??.intValue ?? 0
        guard size <= manifestLimit else { throw ImportError.unreadable(file: file, reason: "\(size) bytes, more than the \(manifestLimit)-byte limit for a manifest") }
        let data: Data
        do { data = try Data(contentsOf: manifestURL) } catch {
            throw ImportError.unreadable(file: file, reason: (error as NSError).localizedDescription)
        }
        let object: Any
        do { object = try JSONSerialization.jsonObject(with: data) } catch { throw bad("", "not JSON: \((error as NSError).localizedDescription)") }
        guard let manifest = object as? [String: Any] else { throw bad("", "not a JSON object") }
        guard let root = manifest["rootModelIdentifier"] as? String else { throw bad("\"rootModelIdentifier\"", "missing or not a string") }
        guard let items = manifest["itemInfoEntries"] as? [String: Any] else { throw bad("\"itemInfoEntries\"", "missing or not an object") }
        guard let item = items[root] as? [String: Any] else { throw bad("\"itemInfoEntries\"", "no entry for the root model '\(root)'") }
        guard let path = item["path"] as? String, !path.isEmpty else { throw bad("\"itemInfoEntries\".\"\(root)\"", "no \"path\"") }
        return try resolve(path, inside: folder.appendingPathComponent("Data"), describedBy: SourceLocation(file: file, place: "\"itemInfoEntries\".\"\(root)\".\"path\""))
    }

    /// A blob file a program names ("@model_path/weights/weight.bin"),
    /// resolved next to the model file and checked to stay in the package.
    public static func blobFile(_ name: String, modelFile: URL, package: URL?, describedBy loc: SourceLocation) throws -> URL {
        guard name.hasPrefix(modelPathPrefix) else {
            throw ImportError.badExternalData(loc, reason: "blob file '\(name)' does not start with \(modelPathPrefix)")
        }
        let relative = String(name.dropFirst(modelPathPrefix.count))
        let folder = modelFile.deletingLastPathComponent()
        let url = try resolve(relative, inside: folder, describedBy: loc)
        if let package {
            let base = package.standardizedFileURL.resolvingSymlinksInPath().path + "/"
            guard url.path.hasPrefix(base) else { throw ImportError.badExternalData(loc, reason: "blob file '\(name)' leads out of the package") }
        }
        return url
    }

    /// `relative` inside `folder` (no absolute paths, no "..", no symlink
    /// leading out), and an existing file.
    static func resolve(_ relative: String, inside folder: URL, describedBy loc: SourceLocation) throws -> URL {
        if relative.hasPrefix("/") || relative.contains("\\") || relative.split(separator: "/").contains("..") {
            throw ImportError.badExternalData(loc, reason: "path '\(relative)' escapes its folder")
        }
        let base = folder.standardizedFileURL.resolvingSymlinksInPath()
        let url = base.appendingPathComponent(relative).standardizedFileURL.resolvingSymlinksInPath()
        let basePath = base.path.hasSuffix("/") ? base.path : base.path + "/"
        guard url.path.hasPrefix(basePath) else { throw ImportError.badExternalData(loc, reason: "path '\(relative)' leads out of \(folder.path)") }
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDir), !isDir.boolValue else {
            throw ImportError.badExternalData(loc, reason: "'\(relative)' is not a file in \(folder.path)")
        }
        return url
    }
}
