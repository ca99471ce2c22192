import Foundation
import ShrinkwrapIR

// MARK: - Specs and files

extension InputData {
    /// A spec is NAME=PATH when the text before one of its '=' signs is a
    /// runtime input's name; otherwise it is a path.
    static func parse(_ spec: String, inputs: [ValueInfo]) throws -> (name: String?, path: String) {
        guard !spec.isEmpty else { throw Error("empty input data path") }
        var i = spec.startIndex
        while let eq = spec[i...].firstIndex(of: "=") {
            let name = String(spec[..<eq])
            if inputs.contains(where: { $0.name == name }) {
                let path = String(spec[spec.index(after: eq)...])
                guard !path.isEmpty else { throw Error("'\(spec)': no path after '\(name)='") }
                return (name, path)
            }
            i = spec.index(after: eq)
        }
        if let eq = spec.firstIndex(of: "="), eq != spec.startIndex, !FileManager.default.fileExists(atPath: spec) {
            let names = inputs.map(\.name).joined(separator: ", ")
            throw Error("'\(spec)': the model has no input '\(spec[..<eq])' (its inputs: \(names)), and no file has that name")
        }
        return (nil, spec)
    }

    public enum Kind: Sendable { case npy, npz, image, text }

    struct DataFile {
        var url: URL
        /// The path as shown to the user: the spec, or the spec's folder joined with the file name.
        var display: String
        var kind: Kind
    }

    /// What one spec expands to: the files, and whether the spec was a folder.
    struct Expansion {
        var path: String
        var files: [DataFile]
        var isFolder: Bool
    }

    /// The kind of data file `name` is, by its extension (case-insensitive); nil for other files.
    public static func kind(of name: String) -> Kind? {
        let ext = URL(fileURLWithPath: name).pathExtension.lowercased()
        if ext == "npy" { return .npy }
        if ext == "npz" { return .npz }
        if ImageData.extensions.contains(ext) { return .image }
        if TextData.extensions.contains(ext) { return .text }
        return nil
    }

    static let kindsText = ".npy, .npz, .png, .jpg or .txt"

    /// A file, or a folder's data files. In a folder, .txt files count as
    /// data only when `text` is true (a vocabulary was given); otherwise
    /// they are left alone like any other file (a README, labels.txt).
    static func expand(_ path: String, text: Bool) throws -> Expansion {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw Error("\(path): no such file or folder")
        }
        let url = URL(fileURLWithPath: path)
        guard isDirectory.boolValue else {
            guard let k = kind(of: path) else { throw Error("\(path): not a \(kindsText) file (input data are NumPy arrays, PNG / JPEG images or text)") }
            return Expansion(path: path, files: [DataFile(url: url, display: path, kind: k)], isFolder: false)
        }
        let names: [String]
        do { names = try FileManager.default.contentsOfDirectory(atPath: path) } catch {
            throw Error("\(path): cannot list folder: \((error as NSError).localizedDescription)")
        }
        let visible = names.filter { !$0.hasPrefix(".") }
        var files: [DataFile] = []
        var others: [String] = []
        let prefix = path.hasSuffix("/") ? path : path + "/"
        for name in visible.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
            let fileURL = url.appendingPathComponent(name)
            var sub: ObjCBool = false
            guard FileManager.default.fileExists(atPath: fileURL.path, isDirectory: &sub), !sub.boolValue else { continue }
            if let k = kind(of: name), k != .text || text {
                files.append(DataFile(url: fileURL, display: prefix + name, kind: k))
            } else {
                others.append(name)
            }
        }
        if files.isEmpty {
            if others.isEmpty { throw Error("\(prefix): the folder has no files (expected \(kindsText) input data)") }
            let shown = others.prefix(3).joined(separator: ", ") + (others.count > 3 ? ", …" : "")
            throw Error("\(prefix): no \(kindsText) files in the folder (found \(others.count) other file\(others.count == 1 ? "" : "s"): \(shown))")
        }
        return Expansion(path: prefix, files: files, isFolder: true)
    }

    static func readNPY(_ f: DataFile) throws -> Tensor {
        do { return try NPY.read(f.url) } catch let e as NPY.Error {
            throw Error("\(f.display): \(e.reason)")
        }
    }

    static func readNPZ(_ f: DataFile) throws -> [(name: String, tensor: Tensor)] {
        let members: [(name: String, tensor: Tensor)]
        do { members = try NPZ.read(f.url) } catch let e as NPZ.Error {
            throw Error(NPZ.Error(file: f.display, member: e.member, reason: e.reason).description)
        }
        guard !members.isEmpty else { throw Error("\(f.display): the archive holds no arrays") }
        return members
    }
}
