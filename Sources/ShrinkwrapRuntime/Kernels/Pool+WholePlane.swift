import ShrinkwrapIR
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Pooling windows that cover a whole unpadded plane (TFLite's AVERAGE_POOL_2D over the full input).
extension NNKernels {
    /// AveragePool / LpPool whose only window is the whole plane, without
    /// padding: PoolLoop's float32 running sum in row-major order (from +0),
    /// then its divisor or root, so bit-identical to it. Eight planes are summed
    /// side by side (independent dependency chains). nil for any other window.
    static func poolWholePlane(_ x: [Float], planes: Int, geo: WindowGeometry, kind: PoolKind, threads: Int) -> [Float]? {
        guard fastPaths, planes > 0, geo.output == [1, 1, 1], geo.kernel == geo.input, geo.dilations == [1, 1, 1],
              geo.padBegin == [0, 0, 0], geo.padEnd == [0, 0, 0] else { return nil }
        var pw: Float = 1, average = false
        switch kind {
        case .max: return nil
        case .average: average = true
        case .lp(let p): pw = p
        }
        let n = geo.inputCount
        guard n > 0, x.count == planes * n else { return nil }
        let groups = (planes + 7) / 8
        return makeFloats(planes) { yp in
            let ys = SendablePointer(yp)
            x.withUnsafeBufferPointer { xb in
                guard let xp = xb.baseAddress else { return }
                parallelChunks(groups, threads: threads, minChunk: max(1, 32768 / (8 * n))) { range in
                    for g in range {
                        // Lanes past the last plane repeat it; their sums are dropped.
                        let p = (0..<8).map { xp + min(8 * g + $0, planes - 1) * n }
                        let s = average ? planeSums8(p, n) : lpPlaneSums8(p, n, pw)
                        for k in 0..<min(8, planes - 8 * g) {
                            let v = s[k]
                            ys.p[8 * g + k] = average ? v / Float(n)
                                : (pw == 2 ? v.squareRoot() : (pw == 1 ? v : powf(v, 1 / pw)))
                        }
                    }
                }
            }
        }
    }

    /// Float32 running sums of eight planes of `n` values, each in order from +0.
    @inline(__always)
    private static func planeSums8(_ p: [UnsafePointer<Float>], _ n: Int) -> [Float] {
        let p0 = p[0], p1 = p[1], p2 = p[2], p3 = p[3], p4 = p[4], p5 = p[5], p6 = p[6], p7 = p[7]
        var s0: Float = 0, s1: Float = 0, s2: Float = 0, s3: Float = 0
        var s4: Float = 0, s5: Float = 0, s6: Float = 0, s7: Float = 0
        for i in 0..<n {
            s0 += p0[i]; s1 += p1[i]; s2 += p2[i]; s3 += p3[i]
            s4 += p4[i]; s5 += p5[i]; s6 += p6[i]; s7 += p7[i]
        }
        return [s0, s1, s2, s3, s4, s5, s6, s7]
    }

    /// Running sums of |v|ᵖ as PoolLoop forms them (v·v for p = 2, |v| for p = 1).
    @inline(__always)
    private static func lpPlaneSums8(_ p: [UnsafePointer<Float>], _ n: Int, _ pw: Float) -> [Float] {
        @inline(__always) func term(_ x: Float) -> Float {
            let v = abs(x)
            return pw == 2 ? v * v : (pw == 1 ? v : powf(v, pw))
        }
        let p0 = p[0], p1 = p[1], p2 = p[2], p3 = p[3], p4 = p[4], p5 = p[5], p6 = p[6], p7 = p[7]
        var s0: Float = 0, s1: Float = 0, s2: Float = 0, s3: Float = 0
        var s4: Float = 0, s5: Float = 0, s6: Float = 0, s7: Float = 0
        for i in 0..<n {
            s0 += term(p0[i]); s1 += term(p1[i]); s2 += term(p2[i]); s3 += term(p3[i])
            s4 += term(p4[i]); s5 += term(p5[i]); s6 += term(p6[i]); s7 += term(p7[i])
        }
        return [s0, s1, s2, s3, s4, s5, s6, s7]
    }
}
