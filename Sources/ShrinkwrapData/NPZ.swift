import Foundation
import ShrinkwrapIR
import ZipArchive

/// NumPy `.npz` archives: a ZIP file of `NAME.npy` members, as `np.savez`
/// (stored) and `np.savez_compressed` (deflate) write them.
///
/// The ZIP layer is `ZipArchive` (central directory incl. ZIP64, every offset
/// and length checked, CRC-32 verified); this is the .npz layer over it:
/// members must be `NAME.npy`, each name once, decoded by `NPY`. Members keep
/// their archive order. Writing: `encode`, stored members in the order given.
public enum NPZ {
    public struct Error: UserFacingError, Equatable {
        public let file: String
        public let member: String?
        public let reason: String
        public var description: String {
            (member.map { "\(file): member '\($0)': \(reason)" } ?? "\(file): \(reason)").escapingControlCharacters
        }
    }

    /// The largest member (uncompressed) read: 4 GiB.
    static let memberLimit = 1 << 32

    static func read(_ url: URL) throws -> [(name: String, tensor: Tensor)] {
        let data: Data
        do { data = try Data(contentsOf: url) } catch {
            throw Error(file: url.path, member: nil, reason: "cannot read: \((error as NSError).localizedDescription)")
        }
        return try decode([UInt8](data), file: url.path)
    }

    static func decode(_ bytes: [UInt8], file: String) throws -> [(name: String, tensor: Tensor)] {
        let archive: ZipArchive
        do { archive = try ZipArchive(bytes: bytes, file: file, memberLimit: memberLimit) } catch let e as ZipArchive.Error {
            throw Error(file: file, member: e.member, reason: e.reason)
        }
        var out: [(name: String, tensor: Tensor)] = []
        var seen = Set<String>()
        for e in archive.entries {
            func fail(_ r: String) -> Error { Error(file: file, member: e.name, reason: r) }
            if e.isDirectory { continue }
            guard e.name.hasSuffix(".npy") else { throw fail("not a .npy member (an .npz holds only NAME.npy files)") }
            let name = String(e.name.dropLast(4))
            guard !name.isEmpty else { throw fail("empty array name") }
            guard seen.insert(name).inserted else { throw fail("appears twice in the archive") }
            let content: [UInt8]
            do { content = try archive.contents(of: e) } catch let z as ZipArchive.Error {
                throw fail(z.reason)
            }
            let tensor: Tensor
            do { tensor = try NPY.decode(Data(content), file: "\(file)[\(e.name)]") } catch let npy as NPY.Error {
                throw fail(npy.reason)
            }
            out.append((name: name, tensor: tensor))
        }
        return out
    }

    /// An .npz archive (stored, as `np.savez` writes) of `NAME.npy` members, in the order given,
    /// byte for byte the same for the same arrays (ZipWriter: fixed timestamps, no extras).
    /// Names must be non-empty, distinct, relative ZIP member names (no "..", leading "/", "\\").
    public static func encode(_ arrays: [(name: String, tensor: Tensor)], file: String) throws -> [UInt8] {
        var seen = Set<String>()
        for a in arrays {
            guard !a.name.isEmpty else { throw Error(file: file, member: nil, reason: "an array without a name") }
            guard seen.insert(a.name).inserted else { throw Error(file: file, member: a.name, reason: "given twice") }
        }
        do {
            return try ZipWriter.stored(arrays.map { (name: $0.name + ".npy", data: [UInt8](NPY.encode($0.tensor))) }, file: file)
        } catch let e as ZipArchive.Error {
            throw Error(file: file, member: e.member, reason: e.reason)
        }
    }

    // Little-endian fields, for tests that damage archives at known places.
    static func u16(_ b: [UInt8], _ at: Int) -> Int { ZipArchive.u16(b, at) }
    static func u32(_ b: [UInt8], _ at: Int) -> Int { ZipArchive.u32(b, at) }
}
