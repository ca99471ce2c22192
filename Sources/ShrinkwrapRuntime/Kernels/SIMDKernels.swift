import CKernels

/// The SIMD level of Shrinkwrap's C kernels (CKernels) and Swift entry points to its elementwise math.
/// The level is chosen once per process from the CPU (AVX-512, AVX2+FMA, else portable C), or pinned
/// with `SHRINKWRAP_SIMD=portable|avx2|avx512`; tests set `level` to compare levels.
public enum SIMDKernels {
    public static let portable: Int32 = 0
    public static let avx2: Int32 = 1
    public static let avx512: Int32 = 2

    /// The best level this CPU supports.
    public static var best: Int32 { sk_level_best() }

    /// The level the kernels run at (capped at `best` when set higher).
    nonisolated(unsafe) public static var level: Int32 = sk_level_active()

    /// "portable", "avx2" or "avx512" for a level (capped at what the CPU supports).
    public static func name(_ level: Int32) -> String { String(cString: sk_level_name(level)) }

    /// The elementwise functions with a C implementation.
    public enum Unary: Equatable, Sendable {
        case exp, tanh, sigmoid, hardSwish
        case swish(alpha: Float)
        case hardSigmoid(alpha: Float, beta: Float)
    }

    /// `f` over `n` floats at `level` (`y` may equal `x`).
    public static func apply(_ f: Unary, _ x: UnsafePointer<Float>, _ y: UnsafeMutablePointer<Float>, count n: Int,
                             level: Int32 = SIMDKernels.level) {
        switch f {
        case .exp: sk_exp(level, x, y, n)
        case .tanh: sk_tanh(level, x, y, n)
        case .sigmoid: sk_sigmoid(level, x, y, n)
        case .hardSwish: sk_hardswish(level, x, y, n)
        case .swish(let alpha): sk_swish(level, x, y, n, alpha)
        case .hardSigmoid(let alpha, let beta): sk_hardsigmoid(level, x, y, n, alpha, beta)
        }
    }

    /// Elements per thread below which splitting costs more than it saves: the vectorised loops take
    /// ~0.05 ns (clamps) to ~0.3 ns (exp, tanh) per element, a thread hand-off several µs.
    static func grain(_ f: Unary) -> Int {
        switch f {
        case .hardSwish, .hardSigmoid: return 1 << 18
        default: return 1 << 16
        }
    }

    /// `f` over an array, split across `threads` in chunks of at least `grain` elements.
    public static func map(_ f: Unary, _ x: [Float], threads: Int, grain: Int? = nil) -> [Float] {
        let n = x.count
        let grain = grain ?? self.grain(f)
        if n == 0 { return [] }
        let level = self.level
        return x.withUnsafeBufferPointer { xb in
            [Float](unsafeUninitializedCapacity: n) { out, count in
                if let xp = xb.baseAddress, let yp = out.baseAddress {
                    let ys = SendablePointer(yp)
                    parallelChunks(n, threads: threads, minChunk: grain) { r in
                        apply(f, xp + r.lowerBound, ys.p + r.lowerBound, count: r.count, level: level)
                    }
                }
                count = n
            }
        }
    }

    /// Int64 → Float (round to nearest) over an array.
    static func floats(fromInts x: [Int64], threads: Int) -> [Float] {
        let n = x.count
        if n == 0 { return [] }
        return x.withUnsafeBufferPointer { xb in
            [Float](unsafeUninitializedCapacity: n) { out, count in
                if let xp = xb.baseAddress, let yp = out.baseAddress {
                    let ys = SendablePointer(yp)
                    parallelChunks(n, threads: threads, minChunk: 1 << 18) { r in
                        sk_i64_to_f32(xp + r.lowerBound, ys.p + r.lowerBound, r.count)
                    }
                }
                count = n
            }
        }
    }

    /// Float → Int64 truncated toward zero (NaN → 0, saturating) over an array.
    static func ints(fromFloats x: [Float], threads: Int) -> [Int64] {
        let n = x.count
        if n == 0 { return [] }
        return x.withUnsafeBufferPointer { xb in
            [Int64](unsafeUninitializedCapacity: n) { out, count in
                if let xp = xb.baseAddress, let yp = out.baseAddress {
                    let ys = SendablePointer(yp)
                    parallelChunks(n, threads: threads, minChunk: 1 << 18) { r in
                        sk_f32_to_i64(xp + r.lowerBound, ys.p + r.lowerBound, r.count)
                    }
                }
                count = n
            }
        }
    }
}
