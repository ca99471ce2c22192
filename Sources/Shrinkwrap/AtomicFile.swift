import Foundation
import ShrinkwrapIR

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
