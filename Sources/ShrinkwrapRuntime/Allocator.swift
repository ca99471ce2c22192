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
/// Tensors up to 32 MiB come from the heap too (magika-v3-3: without it,
/// its 1–2 MiB tensors were mapped afresh every run, 12 → 21 ms).
/// Once an interpreter exists, freed memory stays with the process (the heap
/// is not trimmed, and it grows 64 MiB at a time), as onnxruntime's arena
/// keeps it: peak memory is unchanged, later runs reuse it. A process that
/// set MALLOC_TRIM_THRESHOLD_, MALLOC_TOP_PAD_ or MALLOC_MMAP_THRESHOLD_
/// itself keeps its own choice.
enum Allocator {
    static let keepFreedMemory: Void = {
        #if canImport(Glibc)
        // mallopt is glibc's (malloc.h, which the Glibc module does not export); looked up like OpenBLAS.
        typealias MalloptFn = @convention(c) (Int32, Int32) -> Int32
        let trimThreshold: Int32 = -1, topPad: Int32 = -2, mmapThreshold: Int32 = -3  // M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD
        guard getenv("MALLOC_TRIM_THRESHOLD_") == nil, getenv("MALLOC_TOP_PAD_") == nil, getenv("MALLOC_MMAP_THRESHOLD_") == nil,
              let sym = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt") else { return }
        let mallopt = unsafeBitCast(sym, to: MalloptFn.self)
        _ = mallopt(trimThreshold, Int32.max)
        _ = mallopt(topPad, 64 << 20)
        // Setting either of those freezes glibc's mmap threshold at 128 KiB: every larger tensor would be
        // mapped afresh (and faulted in) each run. Up to 32 MiB (glibc's ceiling) they come from the heap.
        _ = mallopt(mmapThreshold, 32 << 20)
        #endif
    }()
}
