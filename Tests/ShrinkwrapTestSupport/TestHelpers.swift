import Foundation

/// The text of the error `body` throws ("no error" when it does not throw).
public func errorText(_ body: () throws -> Void) -> String {
    do { try body(); return "no error" } catch { return "\(error)" }
}

/// A new empty folder under the temporary directory, named `shrinkwrap-<label>-<uuid>`.
public func makeTempDir(_ label: String) throws -> URL {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("shrinkwrap-\(label)-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    return dir
}

/// The seeded generator with the bounded draw the corruption tests use.
public typealias TestRNG = SplitMix

extension SplitMix {
    public init(state: UInt64) { self.init(seed: state) }
    public mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
}
