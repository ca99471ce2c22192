import ShrinkwrapIR

/// Numpy-style (multidirectional) broadcasting, shared by every elementwise kernel.
public enum Broadcast {
    /// The broadcast shape of several shapes, or nil when they are incompatible.
    public static func shape(_ shapes: [[Int]]) -> [Int]? {
        var rank = 0
        for s in shapes { rank = Swift.max(rank, s.count) }
        var out = [Int](repeating: 1, count: rank)
        for s in shapes {
            let off = rank - s.count
            for (i, d) in s.enumerated() {
                let o = out[off + i]
                if o == d || d == 1 { continue }
                if o == 1 { out[off + i] = d } else { return nil }
            }
        }
        return out
    }

    /// Strides of `input` as seen from `output` (0 along broadcast axes).
    public static func strides(of input: [Int], in output: [Int]) -> [Int] {
        let s = stridesOf(input)
        let off = output.count - input.count
        var out = [Int](repeating: 0, count: output.count)
        for i in 0..<input.count where input[i] != 1 { out[off + i] = s[i] }
        return out
    }

    /// Calls `body(outIndex, offsets)` for runs of the output: `body` receives
    /// the first output index of a run along the last axis, the run length and
    /// each input's starting offset and step along that axis.
    @inlinable
    public static func forEachRun(output: [Int], inputs: [[Int]],
                                  _ body: (_ outStart: Int, _ length: Int, _ offsets: [Int], _ steps: [Int]) -> Void) {
        let total = output.reduce(1, *)
        if total == 0 { return }
        let rank = output.count
        if rank == 0 { body(0, 1, [Int](repeating: 0, count: inputs.count), [Int](repeating: 0, count: inputs.count)); return }
        let st = inputs.map { strides(of: $0, in: output) }
        let inner = output[rank - 1]
        let steps = st.map { $0[rank - 1] }
        var idx = [Int](repeating: 0, count: rank)
        var offs = [Int](repeating: 0, count: inputs.count)
        var outStart = 0
        while outStart < total {
            body(outStart, inner, offs, steps)
            outStart += inner
            // Advance the odometer over the outer axes.
            var k = rank - 2
            while k >= 0 {
                idx[k] += 1
                for j in 0..<offs.count { offs[j] += st[j][k] }
                if idx[k] < output[k] { break }
                for j in 0..<offs.count { offs[j] -= st[j][k] * output[k] }
                idx[k] = 0
                k -= 1
            }
        }
    }

    /// Elementwise `f(a, b)` with broadcasting.
    @inlinable
    public static func binary<A, B, R>(_ a: [A], _ aShape: [Int], _ b: [B], _ bShape: [Int], outShape: [Int],
                                      _ f: (A, B) -> R) -> [R] {
        let n = outShape.reduce(1, *)
        if n == 0 { return [] }
        if aShape == bShape {
            return a.withUnsafeBufferPointer { ap in
                b.withUnsafeBufferPointer { bp in
                    [R](unsafeUninitializedCapacity: n) { out, count in
                        for i in 0..<n { (out.baseAddress! + i).initialize(to: f(ap[i], bp[i])) }
                        count = n
                    }
                }
            }
        }
        return a.withUnsafeBufferPointer { ap in
            b.withUnsafeBufferPointer { bp in
                [R](unsafeUninitializedCapacity: n) { out, count in
                    let o = out.baseAddress!
                    forEachRun(output: outShape, inputs: [aShape, bShape]) { start, len, offs, steps in
                        var ia = offs[0], ib = offs[1]
                        let sa = steps[0], sb = steps[1]
                        for j in 0..<len {
                            (o + start + j).initialize(to: f(ap[ia], bp[ib]))
                            ia += sa; ib += sb
                        }
                    }
                    count = n
                }
            }
        }
    }

    /// Copies `values` (of `shape`) broadcast to `outShape`.
    @inlinable
    public static func expand<T>(_ values: [T], _ shape: [Int], to outShape: [Int]) -> [T] {
        let n = outShape.reduce(1, *)
        if shape == outShape { return values }
        if n == 0 { return [] }
        return values.withUnsafeBufferPointer { vp in
            [T](unsafeUninitializedCapacity: n) { out, count in
                let o = out.baseAddress!
                forEachRun(output: outShape, inputs: [shape]) { start, len, offs, steps in
                    var i = offs[0]
                    for j in 0..<len { (o + start + j).initialize(to: vp[i]); i += steps[0] }
                }
                count = n
            }
        }
    }
}
