import ShrinkwrapIR

/// ONNX DequantizeLinear (opset 21 form): `y = (x − zero_point) · scale`,
/// with one scale, one per index of `axis`, or one per block of `block_size`
/// along `axis`. Constant weights never get here (importers turn them into
/// affine weight encodings); this runs the ones computed at run time.
enum QuantizationKernels {
    static func dequantizeLinear(_ c: KernelContext) throws -> [Tensor] {
        let x = try c.input(0), s = try c.input(1)
        guard let q = x.ints, x.dtype.isInteger else { throw c.fail("x is \(x.dtype); integer codes expected") }
        guard let scale = s.floats, s.dtype.isFloatingPoint else { throw c.fail("x_scale is \(s.dtype); a float expected") }
        let axis = try c.int("axis", default: 1), blockSize = try c.int("block_size", default: 0)
        let block: [Int]
        do {
            block = try AffineWeights.dequantizeLinearBlockShape(x: x.shape, scale: s.shape, axis: axis, blockSize: blockSize)
        } catch { throw c.fail(error.reason) }
        var zero = [Int64](repeating: 0, count: scale.count)
        if let z = c.optionalInput(2) {
            guard let zv = z.ints, z.dtype == x.dtype, zv.count == scale.count else {
                throw c.fail("x_zero_point (\(z.dtype) \(z.shape)) does not match x (\(x.dtype)) and x_scale \(s.shape)")
            }
            zero = zv
        }
        var out = [Float](repeating: 0, count: q.count)
        BlockRuns(shape: x.shape, blockShape: block).forEach { range, k in
            let sc = Double(scale[k]), z = Double(zero[k])
            for i in range { out[i] = Float((Double(q[i]) - z) * sc) }
        }
        let y = Tensor(out, shape: x.shape)
        return [s.dtype == .float32 ? y : ElementwiseKernels.castTensor(y, to: s.dtype)]
    }
}
