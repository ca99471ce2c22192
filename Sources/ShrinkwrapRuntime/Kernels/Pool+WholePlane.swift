import ShrinkwrapIR
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Pools whose one window is a whole plane (TFLite's AVERAGE_POOL_2D over the full
// input, the global pools): the general loops' running sums, eight planes side by side.
extension NNKernels {
    /// AveragePool / LpPool whose only window is the whole plane, without
    /// padding: PoolLoop's float32 running sum in row-major order (from +0),
    /// then its divisor or root, so bit-identical to it. nil for any other window.
    static func poolWholePlane(_ x: [Float], planes: Int, geo: WindowGeometry, kind: PoolKind, threads: Int) -> [Float]? {
        guard fastPaths, planes > 0, geo.output == [1, 1, 1], geo.kernel == geo.input, geo.dilations == [1, 1, 1],
              geo.padBegin == [0, 0, 0], geo.padEnd == [0, 0, 0] else { return nil }
        let n = geo.inputCount
        guard n > 0, x.count == planes * n else { return nil }
        switch kind {
        case .max:
            return nil
        case .average:
            return eightPlanes(x, planes: planes, n: n, threads: threads) { p in
                laneSums8(p, n) { $0 }.map { $0 / Float(n) }
            }
        case .lp(let pw):
            return eightPlanes(x, planes: planes, n: n, threads: threads) { p in
                laneSums8(p, n) { x -> Float in
                    let v = abs(x)
                    return pw == 2 ? v * v : (pw == 1 ? v : powf(v, pw))
                }.map { v in pw == 2 ? v.squareRoot() : (pw == 1 ? v : powf(v, 1 / pw)) }
            }
        }
    }

    /// GlobalAveragePool / GlobalLpPool: globalPool's float64 running sums
    /// (each plane in order from +0) and its final division or root.
    static func globalPoolPlanes(_ x: [Float], planes: Int, plane n: Int, kind: PoolKind, threads: Int) -> [Float]? {
        guard fastPaths, planes > 0, n > 0, x.count == planes * n else { return nil }
        switch kind {
        case .max:
            return nil
        case .average:
            return eightPlanes(x, planes: planes, n: n, threads: threads) { p in
                laneSums8(p, n) { Double($0) }.map { Float($0 / Double(n)) }
            }
        case .lp(let pw):
            return eightPlanes(x, planes: planes, n: n, threads: threads) { p in
                laneSums8(p, n) { x -> Double in
                    let v = abs(x)
                    return Double(pw == 2 ? v * v : (pw == 1 ? v : powf(v, pw)))
                }.map { s in Float(pw == 2 ? s.squareRoot() : (pw == 1 ? s : pow(s, 1 / Double(pw)))) }
            }
        }
    }

    /// One value per plane of `n` values, computed by `body` for groups of
    /// eight planes (lanes past the last plane repeat it and are dropped).
    private static func eightPlanes(_ x: [Float], planes: Int, n: Int, threads: Int,
                                    _ body: ([UnsafePointer<Float>]) -> [Float]) -> [Float] {
        let groups = (planes + 7) / 8
        return makeFloats(planes) { yp in
            let ys = SendablePointer(yp)
            x.withUnsafeBufferPointer { xb in
                guard let xp = xb.baseAddress else { return }
                parallelChunks(groups, threads: threads, minChunk: max(1, 32768 / (8 * n))) { range in
                    for g in range {
                        let v = body((0..<8).map { xp + min(8 * g + $0, planes - 1) * n })
                        for k in 0..<min(8, planes - 8 * g) { ys.p[8 * g + k] = v[k] }
                    }
                }
            }
        }
    }

    /// Running sums of `term(v)` over eight planes of `n` values, each in
    /// order from +0: eight independent dependency chains.
    @inline(__always)
    private static func laneSums8<A: BinaryFloatingPoint>(_ p: [UnsafePointer<Float>], _ n: Int,
                                                         _ term: (Float) -> A) -> [A] {
        let p0 = p[0], p1 = p[1], p2 = p[2], p3 = p[3], p4 = p[4], p5 = p[5], p6 = p[6], p7 = p[7]
        var s0: A = 0, s1: A = 0, s2: A = 0, s3: A = 0, s4: A = 0, s5: A = 0, s6: A = 0, s7: A = 0
        for i in 0..<n {
            s0 += term(p0[i]); s1 += term(p1[i]); s2 += term(p2[i]); s3 += term(p3[i])
            s4 += term(p4[i]); s5 += term(p5[i]); s6 += term(p6[i]); s7 += term(p7[i])
        }
        return [s0, s1, s2, s3, s4, s5, s6, s7]
    }
}
