import CKernels
import ShrinkwrapIR

/// How one stride-1 Conv runs in the Winograd domain: its two spatial axes (a 1-D convolution over
/// a plane one column wide is laid along w, where the transforms vectorise), the tiles of m_h × m_w
/// outputs, and the blocks the work is cut into. Blocks and filter chunks depend only on the
/// shapes, never on the thread count, so the bits do not either.
///
/// A block is a run of tile rows (or a part of one tile row). Its tiles are the GEMMs' columns,
/// laid out row by row with `line` columns per tile row: `line` − (tiles per row) spare columns
/// let every transform step be one vector operation over the whole block (a tile's inputs
/// beyond its row's phases spill into them); their results are never read.
struct WinogradPlan {
    let h: WinogradAxis, w: WinogradAxis
    let inH: Int, inW: Int, outH: Int, outW: Int, padH: Int, padW: Int
    let channels: Int, filters: Int
    let tilesH: Int, tilesW: Int
    /// Tiles per block along each axis, and filters per GEMM chunk.
    let blockRows: Int, blockCols: Int, chunk: Int

    var alpha: Int { h.alpha * w.alpha }
    /// Columns per tile row in a block: its tiles plus room for the inputs that spill over.
    var line: Int { blockCols + (w.alpha - 1) / w.m }
    /// Columns of a whole block (the GEMMs' N).
    var columns: Int { blockRows * line }

    /// The plan for a Conv of `geo` (group 1) whose Winograd filters have shape `filterShape`; nil
    /// when the Conv does not qualify (strides or dilations other than 1, 3-D, other kernels, a
    /// filter tensor made for another kernel).
    init?(geo: WindowGeometry, channels: Int, filters: Int, filterShape: [Int]) {
        guard geo.input[0] == 1, geo.kernel[0] == 1, geo.output[0] == 1,
              geo.strides == [1, 1, 1], geo.dilations == [1, 1, 1],
              let axes = NNKernels.winogradAxes(kh: geo.kernel[1], kw: geo.kernel[2]),
              filterShape == [axes.h.alpha * axes.w.alpha, filters, channels] else { return nil }
        var (h, w) = axes
        var inH = geo.input[1], inW = geo.input[2], outH = geo.output[1], outW = geo.output[2]
        var padH = geo.padBegin[1], padW = geo.padBegin[2]
        if w.r == 1, inW == 1, outW == 1, padW == 0, geo.padEnd[2] == 0 {
            // One column: the plane is one contiguous line, transformed along it.
            swap(&h, &w); swap(&inH, &inW); swap(&outH, &outW); swap(&padH, &padW)
        }
        self.h = h; self.w = w
        self.inH = inH; self.inW = inW; self.outH = outH; self.outW = outW; self.padH = padH; self.padW = padW
        self.channels = channels; self.filters = filters
        tilesH = (outH + h.m - 1) / h.m
        tilesW = (outW + w.m - 1) / w.m
        guard tilesH > 0, tilesW > 0 else { return nil }
        // About 1 MiB of transformed input per block (at least 16 tiles, at most 512).
        let alpha = h.alpha * w.alpha
        let target = min(512, max(16, (1 << 18) / max(alpha * channels, 1)))
        if tilesW >= target {
            let pieces = (tilesW + target - 1) / target
            blockCols = (tilesW + pieces - 1) / pieces
            blockRows = 1
        } else {
            blockCols = tilesW
            blockRows = max(1, min(tilesH, target / tilesW))
        }
        // Filters per chunk: at least 4 chunks to share between threads; with OpenBLAS, few enough that
        // its small-matrix kernel takes each GEMM (M·N·K ≤ 100³, no packing; magika's 512 × 256 5-tap
        // conv: 3.3 ms in chunks of 24 against 4.2 in chunks of 64), else as many as that allows.
        let columns = blockRows * (blockCols + (w.alpha - 1) / w.m)
        let quarter = max(8, (filters / 4 + 7) / 8 * 8)
        let small = GEMM.packsSmallProducts ? max(8, 1_000_000 / max(columns * channels, 1) / 8 * 8) : filters
        chunk = min(filters, quarter, small)
    }

    /// Worth it: enough tiles per block for the GEMMs (nudenet's 64-channel 3 × 3 convs: 0.73× the
    /// time at 40 × 40, no gain at 20 × 20).
    var pays: Bool { blockRows * blockCols >= 32 }
}

extension NNKernels {
    /// Conv through `plan`: per batch item and block of tiles, the input tiles go to the Winograd
    /// domain (channel by channel), α GEMMs multiply them by the transformed filters (chunk by chunk
    /// of filters), the output transform writes the block's rows, and the epilogue runs on them.
    static func winogradConv(x: UnsafePointer<Float>, u: UnsafePointer<Float>, y: UnsafeMutablePointer<Float>,
                             batch: Int, plan p: WinogradPlan, epilogue: ConvEpilogue, threads: Int) {
        let blocksH = (p.tilesH + p.blockRows - 1) / p.blockRows
        let blocksW = (p.tilesW + p.blockCols - 1) / p.blockCols
        let blocks = blocksH * blocksW
        let chunks = (p.filters + p.chunk - 1) / p.chunk
        let vCount = p.alpha * p.channels * p.columns
        let xs = SendablePointer(UnsafeMutablePointer(mutating: x)), ys = SendablePointer(y)
        func block(_ index: Int) -> (th: Range<Int>, tw: Range<Int>) {
            let bh = index / blocksW, bw = index % blocksW
            return (bh * p.blockRows..<min(p.tilesH, (bh + 1) * p.blockRows),
                    bw * p.blockCols..<min(p.tilesW, (bw + 1) * p.blockCols))
        }
        for b in 0..<batch {
            let xb = UnsafePointer(xs.p) + b * p.channels * p.inH * p.inW
            let yb = ys.p + b * p.filters * p.outH * p.outW
            if blocks >= 2 * threads || threads <= 1 {
                // Whole blocks per thread.
                parallelChunks(blocks, threads: threads) { range in
                    let v = UnsafeMutablePointer<Float>.allocate(capacity: vCount)
                    defer { v.deallocate() }
                    for i in range {
                        let (th, tw) = block(i)
                        winogradInput(xb, into: v, plan: p, th: th, tw: tw, channels: 0..<p.channels)
                        for k in 0..<chunks {
                            winogradOutput(v, u: u, y: yb, plan: p, th: th, tw: tw, chunk: k, epilogue: epilogue)
                        }
                    }
                }
            } else {
                // Few blocks: the channels, then the filter chunks, of each block split between threads.
                let v = UnsafeMutablePointer<Float>.allocate(capacity: vCount)
                defer { v.deallocate() }
                let vs = SendablePointer(v)
                for i in 0..<blocks {
                    let (th, tw) = block(i)
                    let perChannel = p.columns * p.alpha * 4
                    parallelChunks(p.channels, threads: threads, minChunk: max(1, 16384 / max(perChannel, 1))) { cs in
                        winogradInput(xb, into: vs.p, plan: p, th: th, tw: tw, channels: cs)
                    }
                    parallelChunks(chunks, threads: threads) { ks in
                        for k in ks { winogradOutput(vs.p, u: u, y: yb, plan: p, th: th, tw: tw, chunk: k, epilogue: epilogue) }
                    }
                }
            }
        }
    }

    /// V[ξ][c][·] for channels `cs` of the block `th` × `tw` (tile (t, q) at column
    /// (t − th.lowerBound)·line + q − tw.lowerBound): (Bᵀ_h · d · B_w)[ξh][ξw] of each tile's
    /// α_h × α_w inputs, zero outside the input. Rows go through the w transform as phases
    /// (position mod m_w), each step one vector operation over the block's columns.
    static func winogradInput(_ x: UnsafePointer<Float>, into v: UnsafeMutablePointer<Float>, plan p: WinogradPlan,
                              th: Range<Int>, tw: Range<Int>, channels cs: Range<Int>) {
        let ah = p.h.alpha, aw = p.w.alpha, mw = p.w.m, mh = p.h.m
        let line = p.line, nb = p.columns, n = th.count * line
        let level = SIMDKernels.level
        // Phases of the block's rows for one i (plus slack: a spare column's inputs run past the last row).
        let phases = UnsafeMutablePointer<Float>.allocate(capacity: mw * (n + line))
        let rows = UnsafeMutablePointer<Float>.allocate(capacity: ah == 1 ? 1 : ah * aw * n)
        defer { phases.deallocate(); rows.deallocate() }
        let phaseStride = n + line
        phases.update(repeating: 0, count: mw * phaseStride)
        var ins = [UnsafePointer<Float>?](repeating: nil, count: max(ah, aw))
        var outs = [UnsafeMutablePointer<Float>?](repeating: nil, count: max(ah, aw))
        let start = tw.lowerBound * mw - p.padW
        p.w.bt.withUnsafeBufferPointer { btw in
            p.h.bt.withUnsafeBufferPointer { bth in
                for c in cs {
                    let plane = x + c * p.inH * p.inW
                    for i in 0..<ah {
                        for (r, t) in th.enumerated() {
                            let ih = t * mh + i - p.padH
                            let dst = phases + r * line
                            if ih < 0 || ih >= p.inH {
                                for ph in 0..<mw { (dst + ph * phaseStride).update(repeating: 0, count: line) }
                            } else {
                                sk_wino_phases(level, plane + ih * p.inW, p.inW, start, mw, line, dst, phaseStride)
                            }
                        }
                        // The w transform of row i of every tile row: into rows[i][ξw], or (no h transform) V.
                        for xw in 0..<aw {
                            outs[xw] = ah == 1 ? v + (xw * p.channels + c) * nb : rows + (i * aw + xw) * n
                        }
                        if aw == 1 {
                            outs[0]?.update(from: phases, count: n)
                        } else {
                            for j in 0..<aw { ins[j] = UnsafePointer(phases + (j % mw) * phaseStride + j / mw) }
                            sk_wino_combine(level, btw.baseAddress, aw, aw, &ins, &outs, n)
                        }
                    }
                    if ah == 1 { continue }
                    for xw in 0..<aw {
                        for i in 0..<ah { ins[i] = UnsafePointer(rows + (i * aw + xw) * n) }
                        for xh in 0..<ah { outs[xh] = v + ((xh * aw + xw) * p.channels + c) * nb }
                        sk_wino_combine(level, bth.baseAddress, ah, ah, &ins, &outs, n)
                    }
                }
            }
        }
    }

    /// Filter chunk `k` of a block: M[ξ] = U[ξ][chunk] · V[ξ] (α GEMMs), then each filter's output
    /// tiles (Aᵀ_h · M · A_w) into its output rows, which then take the epilogue.
    static func winogradOutput(_ v: UnsafePointer<Float>, u: UnsafePointer<Float>, y: UnsafeMutablePointer<Float>,
                               plan p: WinogradPlan, th: Range<Int>, tw: Range<Int>, chunk k: Int, epilogue: ConvEpilogue) {
        let ah = p.h.alpha, aw = p.w.alpha, mh = p.h.m, mw = p.w.m
        let line = p.line, nb = p.columns, n = th.count * line
        let f0 = k * p.chunk, rows = min(p.chunk, p.filters - f0)
        let alpha = p.alpha
        let mm = UnsafeMutablePointer<Float>.allocate(capacity: alpha * rows * nb)
        let z = UnsafeMutablePointer<Float>.allocate(capacity: ah == 1 ? 1 : mh * aw * n)
        let out = UnsafeMutablePointer<Float>.allocate(capacity: mw * n)
        defer { mm.deallocate(); z.deallocate(); out.deallocate() }
        for xi in 0..<alpha {
            GEMM.sgemm(transA: false, transB: false, m: rows, n: n, k: p.channels,
                       a: u + (xi * p.filters + f0) * p.channels, lda: p.channels,
                       b: v + xi * p.channels * nb, ldb: nb, beta: 0, c: mm + xi * rows * nb, ldc: nb, threads: 1)
        }
        let level = SIMDKernels.level
        var ins = [UnsafePointer<Float>?](repeating: nil, count: max(ah, aw))
        var outs = [UnsafeMutablePointer<Float>?](repeating: nil, count: max(mh, mw))
        let col0 = tw.lowerBound * mw, cols = min(p.outW, tw.upperBound * mw) - col0
        p.h.at.withUnsafeBufferPointer { ath in
            p.w.at.withUnsafeBufferPointer { atw in
                for o in 0..<rows {
                    let plane = y + (f0 + o) * p.outH * p.outW
                    if ah > 1 {
                        // The h transform: z[i][ξw] over the block's columns.
                        for xw in 0..<aw {
                            for xh in 0..<ah { ins[xh] = UnsafePointer(mm + ((xh * aw + xw) * rows + o) * nb) }
                            for i in 0..<mh { outs[i] = z + (i * aw + xw) * n }
                            sk_wino_combine(level, ath.baseAddress, mh, ah, &ins, &outs, n)
                        }
                    }
                    for i in 0..<mh {
                        // Output row i of every tile row: the w transform into phases, then into the rows.
                        let zi: (Int) -> UnsafePointer<Float> = { xw in
                            UnsafePointer(ah == 1 ? mm + (xw * rows + o) * nb : z + (i * aw + xw) * n)
                        }
                        let phases: UnsafePointer<Float>
                        if aw == 1 {
                            phases = zi(0)
                        } else {
                            for xw in 0..<aw { ins[xw] = zi(xw) }
                            for j in 0..<mw { outs[j] = out + j * n }
                            sk_wino_combine(level, atw.baseAddress, mw, aw, &ins, &outs, n)
                            phases = UnsafePointer(out)
                        }
                        for (r, t) in th.enumerated() {
                            let oh = t * mh + i
                            if oh >= p.outH { continue }
                            let dst = plane + oh * p.outW + col0
                            let src = phases + r * line
                            if mw == 1 {
                                dst.update(from: src, count: cols)
                            } else {
                                for j in 0..<mw {
                                    let s = src + j * n
                                    var q = 0, at = j
                                    while at < cols { dst[at] = s[q]; q += 1; at += mw }
                                }
                            }
                            epilogue.apply(dst, count: cols, channel: f0 + o)
                        }
                    }
                }
            }
        }
    }
}
