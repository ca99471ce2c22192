#if canImport(Glibc)
import Glibc
#endif

/// How the process's allocator treats memory the interpreter frees.
///
/// Every run allocates each intermediate tensor and frees it after its last
/// reader. glibc returns the top of its heap to the system once more than
/// 128 KiB of it is free, so the next run takes the same pages back one
/// page fault at a time: on ppocr-v4-det that cost a quarter of the run
/// (measured with MALLOC_TRIM_THRESHOLD_ / MALLOC_TOP_PAD_ set: 350 → 275 ms).
/// Once an interpreter exists, freed memory stays with the process (the heap
/// is not trimmed, and it grows 64 MiB at a time), as onnxruntime's arena
/// keeps it: peak memory is unchanged, later runs reuse it. A process that
/// set MALLOC_TRIM_THRESHOLD_ or MALLOC_TOP_PAD_ itself keeps its own choice.
enum Allocator {
    static let keepFreedMemory: Void = {
        #if canImport(Glibc)
        // mallopt is glibc's (malloc.h, which the Glibc module does not export); looked up like OpenBLAS.
        typealias MalloptFn = @convention(c) (Int32, Int32) -> Int32
        let trimThreshold: Int32 = -1, topPad: Int32 = -2  // M_TRIM_THRESHOLD, M_TOP_PAD
        guard getenv("MALLOC_TRIM_THRESHOLD_") == nil, getenv("MALLOC_TOP_PAD_") == nil,
              let sym = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt") else { return }
        let mallopt = unsafeBitCast(sym, to: MalloptFn.self)
        _ = mallopt(trimThreshold, Int32.max)
        _ = mallopt(topPad, 64 << 20)
        #endif
    }()
}
