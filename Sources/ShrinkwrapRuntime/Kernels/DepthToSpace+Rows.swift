import ShrinkwrapIR

// DepthToSpace / SpaceToDepth as row copies.
extension NNKernels {
    /// The input rearranged by DepthToSpace (`toSpace`) or SpaceToDepth, in
    /// the same storage class. Each output row (n, c, y) is written from `bs`
    /// input rows (DepthToSpace: input column X lands at X·bs + bj) or read
    /// from one input row with stride `bs` (SpaceToDepth).
    static func blockRows(_ t: Tensor, toSpace: Bool, bs: Int, dcr: Bool, shape: [Int], threads: Int) -> Tensor {
        let g = BlockGeometry(n: t.shape[0], ch: t.shape[1], h: t.shape[2], w: t.shape[3], bs: bs, dcr: dcr,
                              toSpace: toSpace, out: shape)
        switch t.storage {
        case .float(let a): return Tensor(dtype: t.dtype, shape: shape, storage: .float(g.run(a, threads: threads)))
        case .int(let a): return Tensor(dtype: t.dtype, shape: shape, storage: .int(g.run(a, threads: threads)))
        case .bool(let a): return Tensor(dtype: t.dtype, shape: shape, storage: .bool(g.run(a, threads: threads)))
        }
    }

    private struct BlockGeometry {
        let n: Int, ch: Int, h: Int, w: Int, bs: Int, dcr: Bool, toSpace: Bool
        let out: [Int]   // N × C' × H' × W'

        func run<T>(_ a: [T], threads: Int) -> [T] {
            let oc = out[1], oh = out[2], ow = out[3]
            let rows = out[0] * oc * oh
            let total = rows * ow
            guard total > 0, a.count == n * ch * h * w else { return [] }
            return [T](unsafeUninitializedCapacity: total) { buf, count in
                guard let base = buf.baseAddress else { count = 0; return }
                let ys = SendablePointer(base)
                a.withUnsafeBufferPointer { ab in
                    guard let xp = ab.baseAddress else { return }
                    parallelChunks(rows, threads: threads, minChunk: max(1, 32768 / ow)) { range in
                        for line in range {
                            let y = line % oh, rest = line / oh
                            let cc = rest % oc, b = rest / oc
                            let dst = ys.p + line * ow
                            if toSpace {
                                let bi = y % bs
                                for bj in 0..<bs {
                                    let src = dcr ? (bi * bs + bj) * oc + cc : (cc * bs + bi) * bs + bj
                                    let row = xp + ((b * ch + src) * h + y / bs) * w
                                    var o = bj
                                    for i in 0..<w { (dst + o).initialize(to: row[i]); o &+= bs }
                                }
                            } else {
                                let c0: Int, bi: Int, bj: Int
                                if dcr {
                                    c0 = cc % ch; bj = (cc / ch) % bs; bi = cc / (ch * bs)
                                } else {
                                    bj = cc % bs; bi = (cc / bs) % bs; c0 = cc / (bs * bs)
                                }
                                let row = xp + ((b * ch + c0) * h + y * bs + bi) * w + bj
                                var i = 0
                                for o in 0..<ow { (dst + o).initialize(to: row[i]); i &+= bs }
                            }
                        }
                    }
                }
                count = total
            }
        }
    }
}
