import ShrinkwrapIR

extension NNKernels {
    /// The inputs a Conv multiplies its filters with, as the Conv kernel sees them (same
    /// geometry: strides, dilations, pads, auto_pad; padding reads as 0): for every image and
    /// group, the (C/group · taps) × positions matrix whose row (c, kd, kh, kw) lines up with the
    /// filter's flattened [C/group, k…] and whose column is one output position. `body(group,
    /// matrix, rows, positions)` sees each in turn (image-major), the buffer reused. For
    /// calibration statistics; errors as the Conv kernel gives them.
    public static func convPatches(node: Node, input x: Tensor, weightShape: [Int],
                                   body: (_ group: Int, _ matrix: UnsafePointer<Float>, _ rows: Int, _ positions: Int) throws -> Void) throws {
        let c = KernelContext(node: node, inputs: [x])
        guard let xf = x.floats else { throw c.fail("X must be floating point, got \(x.dtype)") }
        guard x.rank >= 3, weightShape.count == x.rank else {
            throw c.fail("X has shape \(x.shape) and W \(weightShape): ranks must match and be at least 3")
        }
        let n = x.shape[0], ch = x.shape[1]
        let group = try c.int("group", default: 1)
        guard group >= 1, ch % group == 0, weightShape[1] * group == ch else {
            throw c.fail("X has \(ch) channels, W \(weightShape) in \(group) group(s): they do not fit")
        }
        let kernel = Array(weightShape[2...])
        let geo = try WindowGeometry.forward(c, inputSpatial: Array(x.shape[2...]), kernel: kernel, ceilMode: false)
        let cg = ch / group
        let rows = cg * geo.kernelCount, positions = geo.outputCount
        let size = try c.checkedCount([rows, positions])
        guard size > 0 else { return }
        let pIn = geo.inputCount
        var col = [Float](repeating: 0, count: size)
        try xf.withUnsafeBufferPointer { xb in
            guard let xp = xb.baseAddress else { return }
            for image in 0..<n {
                for g in 0..<group {
                    try col.withUnsafeMutableBufferPointer { cb in
                        guard let cp = cb.baseAddress else { return }
                        im2col(x: xp + (image * ch + g * cg) * pIn, channels: cg, geo: geo, col: cp, threads: 1)
                        try body(g, cp, rows, positions)
                    }
                }
            }
        }
    }
}
