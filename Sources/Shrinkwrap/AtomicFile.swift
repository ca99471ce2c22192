import Foundation
import ShrinkwrapIR

/// Writes files atomically: a temporary file in the target folder, then a
/// rename. Refuses to overwrite any path given as an input.
public enum AtomicFile {
    public struct Error: UserFacingError {
        public let description: String
    }

    /// Writes an exported model: its file, or its package folder.
    public static func write(_ model: ExportedModel, to url: URL, protecting inputs: [URL] = []) throws {
        if model.files.isEmpty { try write(model.data, to: url, protecting: inputs) } else { try writeFolder(model.files, to: url, protecting: inputs) }
    }

    /// Writes a folder of files: built complete under a temporary name beside
    /// the target, then renamed into place. A folder already at the target is
    /// moved aside first and removed only once the new one is in place (put
    /// back if the rename fails), so a failure leaves the old one.
    public static func writeFolder(_ files: [(path: String, data: Data)], to url: URL, protecting inputs: [URL] = []) throws {
        let target = url.standardizedFileURL.resolvingSymlinksInPath()
        for i in inputs where i.standardizedFileURL.resolvingSymlinksInPath().path == target.path {
            throw Error(description: "\(url.path): refusing to overwrite an input")
        }
        let fm = FileManager.default
        let dir = url.deletingLastPathComponent()
        let pid = ProcessInfo.processInfo.processIdentifier
        let tmp = dir.appendingPathComponent(".\(url.lastPathComponent).tmp-\(pid)")
        let old = dir.appendingPathComponent(".\(url.lastPathComponent).old-\(pid)")
        do {
            try fm.createDirectory(at: dir, withIntermediateDirectories: true)
            try? fm.removeItem(at: tmp)
            for (path, data) in files {
                let file = tmp.appendingPathComponent(path)
                try fm.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
                try data.write(to: file)
            }
        } catch {
            try? fm.removeItem(at: tmp)
            throw Error(description: "\(url.path): cannot write: \((error as NSError).localizedDescription)")
        }
        var isDir: ObjCBool = false
        let existed = fm.fileExists(atPath: url.path, isDirectory: &isDir)
        if existed {
            guard isDir.boolValue else {
                try? fm.removeItem(at: tmp)
                throw Error(description: "\(url.path): is a file, not a package folder; refusing to replace it")
            }
            // Only a folder of the same kind is replaced (it holds the package's first file, its manifest).
            if let first = files.first?.path, !fm.fileExists(atPath: url.appendingPathComponent(first).path) {
                try? fm.removeItem(at: tmp)
                throw Error(description: "\(url.path): is a folder without \(first), not a package written before; refusing to replace it")
            }
            if rename(url.path, old.path) != 0 {
                let reason = String(cString: strerror(errno))
                try? fm.removeItem(at: tmp)
                throw Error(description: "\(url.path): cannot replace: \(reason)")
            }
        }
        if rename(tmp.path, url.path) != 0 {
            let reason = String(cString: strerror(errno))
            if existed { _ = rename(old.path, url.path) }
            try? fm.removeItem(at: tmp)
            throw Error(description: "\(url.path): cannot write: \(reason)")
        }
        if existed { try? fm.removeItem(at: old) }
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
