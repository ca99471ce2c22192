import ShrinkwrapIR

/// A one-hot encoding multiplied by a matrix, as exporters spell an embedding lookup (jax2tf's
/// `one_hot` then a Dense layer: magika's Expand → Equal with 0 ..< K → Cast → MatMul), run as
/// a row lookup: out[p, :] = W[index(p), :] + 0. With finite weights (the planner checks) each
/// product is 0 · w or 1 · w, both exact, and a GEMM's sums start from +0, so the MatMul gives
/// exactly w + 0 (−0 becomes +0); an index outside 0 ..< K gives +0, as the all-zero row does.
///
/// Inputs: the indices before the Expand (last axis 1), the Expand's shape (or omitted), the
/// iota 0 ..< K (last axis K, the same along every other axis) and W (K × N). Shapes the lookup
/// does not cover (indices not constant along the last axis, a W that is not K × N) run the four
/// nodes' kernels instead.
enum OneHotMatMul {
    static let opType = "__shrinkwrap_OneHotMatMul"

    static let kernel: Kernel = { c in
        let r = try c.input(0), iota = try c.input(2), w = try c.input(3)
        let expandShape = c.optionalInput(1) == nil ? nil : try c.intValues(1)
        guard let wf = w.floats, w.rank == 2, expandShape?.allSatisfy({ $0 >= 0 }) ?? true,
              let indices = r.ints, let aShape = expandShape.map({ Broadcast.shape([r.shape, $0]) }) ?? r.shape,
              let eqShape = Broadcast.shape([aShape, iota.shape]), eqShape.count >= 2, r.shape.last == 1,
              eqShape.last == w.shape[0], iota.shape.last == w.shape[0]
        else { return try unfused(c, expandShape: expandShape) }
        let k = w.shape[0], n = w.shape[1]
        let outShape = Array(eqShape.dropLast()) + [n]
        let rows = try c.checkedCount(Array(eqShape.dropLast()))
        _ = try c.checkedCount(outShape)
        // Where each output row's index sits in `r` (broadcast along r's unit axes).
        let strides = Broadcast.strides(of: r.shape, in: eqShape)
        let lead = Array(eqShape.dropLast())
        var out = [Float](repeating: 0, count: rows * n)
        out.withUnsafeMutableBufferPointer { ob in
            wf.withUnsafeBufferPointer { wb in
                guard let op = ob.baseAddress, let wp = wb.baseAddress else { return }
                var position = [Int](repeating: 0, count: lead.count)
                var at = 0
                for row in 0..<rows {
                    let index = indices[at]
                    let dst = op + row * n
                    if index >= 0 && index < Int64(k) {
                        let src = wp + Int(index) * n
                        for j in 0..<n { dst[j] = src[j] + 0 }
                    }
                    // Next position (row-major over the leading axes).
                    var axis = lead.count - 1
                    while axis >= 0 {
                        position[axis] += 1
                        at += strides[axis]
                        if position[axis] < lead[axis] { break }
                        at -= strides[axis] * position[axis]
                        position[axis] = 0
                        axis -= 1
                    }
                }
            }
        }
        return [Tensor(dtype: w.dtype, shape: outShape, storage: .float(out))]
    }

    /// The four nodes' kernels, one after the other.
    static func unfused(_ c: KernelContext, expandShape: [Int]?) throws -> [Tensor] {
        let label = c.node.label
        func run(_ op: String, _ inputs: [Tensor], _ attributes: [String: Attribute] = [:]) throws -> Tensor {
            guard let kernel = KernelRegistry.kernels[op] else { throw c.fail("no \(op) kernel") }
            let node = Node(name: "\(label) \(op)", opType: op, inputs: inputs.indices.map { "x\($0)" }, outputs: ["y"],
                            attributes: attributes)
            return try kernel(KernelContext(node: node, inputs: inputs, threads: c.threads))[0]
        }
        var a = try c.input(0)
        if let s = c.optionalInput(1), expandShape != nil { a = try run("Expand", [a, s]) }
        let e = try run("Equal", [a, try c.input(2)])
        let f = try run("Cast", [e], ["to": .int(DType.float32.onnxDataType)])
        return [try run("MatMul", [f, try c.input(3)])]
    }
}
