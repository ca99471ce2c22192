import ShrinkwrapIR

// The Pad kernel: constant, reflect, edge and wrap padding through the general element mover.

extension ShapeKernels {
    // MARK: - Padding

    /// Pad: modes constant / reflect / edge / wrap; pads (input 1),
    /// constant_value (input 2), axes (input 3). Negative pads crop.
    public static func pad(_ c: KernelContext) throws -> [Tensor] {
        let x = try c.input(0)
        let r = x.rank
        let pads = try c.intValues(1)
        let mode = try c.string("mode", default: "constant")
        guard ["constant", "reflect", "edge", "wrap"].contains(mode) else {
            throw c.badAttribute("mode", "unknown pad mode '\(mode)'")
        }
        var axes = Array(0..<r)
        if let a = try c.optionalIntValues(3) {
            axes = []
            for v in a {
                let n = v < 0 ? v + r : v
                guard n >= 0 && n < r else { throw c.fail("pad axis \(v) out of range for rank \(r)") }
                guard !axes.contains(n) else { throw c.fail("pad axes \(a) repeat axis \(n)") }
                axes.append(n)
            }
        }
        guard pads.count == 2 * axes.count else {
            throw c.fail("pads has \(pads.count) entries, expected \(2 * axes.count) for \(axes.count) axes")
        }
        var fill = Scalar(f: 0, i: 0, b: false)
        if let v = c.optionalInput(2) {
            guard v.count == 1 else { throw c.fail("constant_value must be a scalar, has shape \(v.shape)") }
            guard sameClass(v.storage, x.storage) else { throw c.fail("constant_value type \(v.dtype) differs from data type \(x.dtype)") }
            fill = Scalar(v.storage)
        }
        var begin = [Int](repeating: 0, count: r), end = [Int](repeating: 0, count: r)
        for (i, a) in axes.enumerated() { begin[a] = pads[i]; end[a] = pads[axes.count + i] }
        var outShape = x.shape
        for a in 0..<r {
            let (s1, o1) = x.shape[a].addingReportingOverflow(begin[a])
            let (s2, o2) = s1.addingReportingOverflow(end[a])
            guard !o1 && !o2 && s2 >= 0 else { throw c.fail("pads \(pads) give a negative or overflowing size on axis \(a)") }
            outShape[a] = s2
        }
        let n = try c.checkedCount(outShape)
        if n == 0 { return [Tensor.zeros(outShape, dtype: x.dtype)] }
        let strides = stridesOf(x.shape)
        var tables: [[Int]] = []
        for a in 0..<r {
            let dim = x.shape[a]
            if dim == 0 && mode != "constant" && outShape[a] > 0 {
                throw c.fail("cannot \(mode)-pad an empty axis \(a)")
            }
            var t = [Int](repeating: 0, count: outShape[a])
            for o in 0..<outShape[a] {
                var i = o - begin[a]
                if i < 0 || i >= dim {
                    switch mode {
                    case "edge": i = i < 0 ? 0 : dim - 1
                    case "wrap": i = ((i % dim) + dim) % dim
                    case "reflect":
                        if dim == 1 { i = 0 } else {
                            let period = 2 * (dim - 1)
                            var m = ((i % period) + period) % period
                            if m >= dim { m = period - m }
                            i = m
                        }
                    default: i = -1
                    }
                }
                t[o] = i < 0 ? Mover.fillMark : i * strides[a]
            }
            tables.append(t)
        }
        let storage = Mover.gather(x.storage, outShape: outShape, tables: tables, fill: fill, threads: c.threads)
        return [Tensor(dtype: x.dtype, shape: outShape, storage: storage)]
    }
}
