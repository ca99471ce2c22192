import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A file mapped read-only into memory, unmapped when released. Pages are
/// read on first touch; `release(_:)` drops the pages of a range already
/// consumed, so a large model's bytes do not all stay resident while their
/// decoded copies are built.
final class MappedFile {
    let bytes: UnsafeRawBufferPointer
    private let pageSize: Int

    /// nil when the file cannot be mapped (empty, not a regular file, …): read it another way.
    init?(path: String) {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG, st.st_size > 0, let size = Int(exactly: st.st_size) else { return nil }
        guard let base = mmap(nil, size, PROT_READ, MAP_PRIVATE, fd, 0), base != MAP_FAILED else { return nil }
        bytes = UnsafeRawBufferPointer(start: base, count: size)
        pageSize = max(Int(sysconf(Int32(_SC_PAGESIZE))), 1)
    }

    deinit {
        if let base = bytes.baseAddress { munmap(UnsafeMutableRawPointer(mutating: base), bytes.count) }
    }

    /// Drops the whole pages inside `range` from memory (they are read again if touched).
    func release(_ range: Range<Int>) {
        guard let base = bytes.baseAddress, range.lowerBound >= 0, range.upperBound <= bytes.count else { return }
        let start = (range.lowerBound + pageSize - 1) / pageSize * pageSize
        let end = range.upperBound / pageSize * pageSize
        guard end > start else { return }
        _ = madvise(UnsafeMutableRawPointer(mutating: base + start), end - start, MADV_DONTNEED)
    }
}
