import ShrinkwrapIR

/// Shape and layout kernels: ops that move or reinterpret elements, plus the
/// small tensor factories (Shape, Size, ConstantOfShape, Range, EyeLike).
///
/// Every kernel here works on all three storage classes and keeps the input
/// dtype (element values are moved, never recomputed).
///
/// This file holds the reshaping kernels and the factories; the others live in
/// extensions in `Shape+Moving.swift` and `Shape+Padding.swift`, and
/// `Shape+Helpers.swift` holds the helpers and element movers they share.
public enum ShapeKernels {
    /// Identity: returns its input unchanged.
    public static func identity(_ c: KernelContext) throws -> [Tensor] { [try c.input(0)] }

    // MARK: - Reinterpreting shape (no element moves)

    /// Flatten: `[d0 … d(a-1), da … dn]` → `[d0·…·d(a-1), da·…·dn]`.
    public static func flatten(_ c: KernelContext) throws -> [Tensor] {
        let x = try c.input(0)
        let r = x.rank
        var a = try c.int("axis", default: 1)
        if a < 0 { a += r }
        guard a >= 0 && a <= r else { throw c.badAttribute("axis", "axis \(a) out of range [-\(r), \(r)]") }
        let outer = x.shape[..<a].reduce(1, *)
        let inner = x.shape[a...].reduce(1, *)
        return [x.reshaped([outer, inner])]
    }

    /// Reshape: 0 copies the input dimension (unless allowzero=1), -1 is inferred.
    public static func reshape(_ c: KernelContext) throws -> [Tensor] {
        let x = try c.input(0)
        let spec = try c.intValues(1)
        let allowZero = try c.int("allowzero", default: 0) != 0
        var out = [Int](repeating: 1, count: spec.count)
        var inferred = -1
        for (i, d) in spec.enumerated() {
            if d == -1 {
                guard inferred < 0 else { throw c.fail("shape \(spec) has more than one -1") }
                inferred = i
            } else if d == 0 && !allowZero {
                guard i < x.rank else { throw c.fail("shape \(spec): 0 at position \(i) has no input dimension to copy (input shape \(x.shape))") }
                out[i] = x.shape[i]
            } else if d < 0 {
                throw c.fail("shape \(spec) has invalid dimension \(d)")
            } else {
                out[i] = d
            }
        }
        let total = x.count
        if inferred >= 0 {
            guard let known = checkedElementCount(out) else { throw c.fail("shape \(spec) is too large") }
            guard known != 0 else { throw c.fail("shape \(spec): cannot infer -1 next to a zero dimension") }
            guard total % known == 0 else { throw c.fail("cannot reshape \(x.shape) (\(total) elements) to \(spec)") }
            out[inferred] = total / known
        }
        guard let n = checkedElementCount(out), n == total else {
            throw c.fail("cannot reshape \(x.shape) (\(total) elements) to \(spec)")
        }
        return [x.reshaped(out)]
    }

    /// Squeeze: removes the listed size-1 axes (input 1), or every size-1 axis
    /// when axes is omitted or empty.
    public static func squeeze(_ c: KernelContext) throws -> [Tensor] {
        let x = try c.input(0)
        let r = x.rank
        var drop = [Bool](repeating: false, count: r)
        if let axes = try c.optionalIntValues(1), !axes.isEmpty {  // empty axes: all size-1 axes, as onnxruntime does
            for a in axes {
                let v = a < 0 ? a + r : a
                guard v >= 0 && v < r else { throw c.fail("squeeze axis \(a) out of range for rank \(r)") }
                guard x.shape[v] == 1 else { throw c.fail("cannot squeeze axis \(a) of size \(x.shape[v]) (shape \(x.shape))") }
                drop[v] = true
            }
        } else {
            for i in 0..<r where x.shape[i] == 1 { drop[i] = true }
        }
        var out: [Int] = []
        for i in 0..<r where !drop[i] { out.append(x.shape[i]) }
        return [x.reshaped(out)]
    }

    /// Unsqueeze: inserts size-1 axes at the positions of input 1 (in output rank).
    public static func unsqueeze(_ c: KernelContext) throws -> [Tensor] {
        let x = try c.input(0)
        let axes = try c.intValues(1)
        let outRank = x.rank + axes.count
        var isNew = [Bool](repeating: false, count: outRank)
        for a in axes {
            let v = a < 0 ? a + outRank : a
            guard v >= 0 && v < outRank else { throw c.fail("unsqueeze axis \(a) out of range for output rank \(outRank)") }
            guard !isNew[v] else { throw c.fail("unsqueeze axes \(axes) repeat axis \(v)") }
            isNew[v] = true
        }
        var out = [Int](repeating: 1, count: outRank)
        var k = 0
        for i in 0..<outRank where !isNew[i] { out[i] = x.shape[k]; k += 1 }
        return [x.reshaped(out)]
    }

    // MARK: - Small factories and inference no-ops

    /// Shape (int64), with optional start / end attributes (clamped).
    public static func shape(_ c: KernelContext) throws -> [Tensor] {
        let x = try c.input(0)
        let r = x.rank
        var s = try c.int("start", default: 0)
        var e = try c.int("end", default: r)
        if s < 0 { s += r }
        if e < 0 { e += r }
        s = min(max(s, 0), r)
        e = min(max(e, 0), r)
        let dims = s < e ? x.shape[s..<e].map { Int64($0) } : []
        return [Tensor(ints: dims, shape: [dims.count])]
    }

    /// Size: the element count as an int64 scalar.
    public static func size(_ c: KernelContext) throws -> [Tensor] {
        let x = try c.input(0)
        return [Tensor.scalar(int: Int64(x.count))]
    }

    /// Dropout in inference: the input, and a mask of all true. Training mode
    /// (input 2 true with a non-zero ratio) is random and is refused.
    public static func dropout(_ c: KernelContext) throws -> [Tensor] {
        let x = try c.input(0)
        if let t = c.optionalInput(2) {
            guard t.count == 1 else { throw c.fail("training_mode must be a scalar, has shape \(t.shape)") }
            let ratio = try c.optionalScalar(1) ?? 0.5
            if t.doubles[0] != 0 && ratio != 0 {
                throw c.fail("training-mode Dropout (random masking) is not supported; export the model in inference mode")
            }
        }
        return [x, Tensor(bools: [Bool](repeating: true, count: x.count), shape: x.shape)]
    }

    /// ConstantOfShape: a tensor of input 1's shape filled with the `value`
    /// attribute (default float32 0).
    public static func constantOfShape(_ c: KernelContext) throws -> [Tensor] {
        let shape = try c.intValues(0)
        guard shape.allSatisfy({ $0 >= 0 }) else { throw c.fail("shape \(shape) has a negative dimension") }
        let n = try c.checkedCount(shape)
        let value = try c.tensorAttribute("value") ?? Tensor([0], shape: [1])
        guard value.count == 1 else { throw c.badAttribute("value", "must hold one element, has shape \(value.shape)") }
        let storage: TensorStorage
        switch value.storage {
        case .float(let a): storage = .float([Float](repeating: a[0], count: n))
        case .int(let a): storage = .int([Int64](repeating: a[0], count: n))
        case .bool(let a): storage = .bool([Bool](repeating: a[0], count: n))
        }
        return [Tensor(dtype: value.dtype, shape: shape, storage: storage)]
    }

    /// Range(start, limit, delta) for float and integer types.
    public static func range(_ c: KernelContext) throws -> [Tensor] {
        let s = try c.input(0), l = try c.input(1), d = try c.input(2)
        guard s.count == 1, l.count == 1, d.count == 1 else { throw c.fail("start, limit and delta must be scalars") }
        switch (s.storage, l.storage, d.storage) {
        case (.float(let sa), .float(let la), .float(let da)):
            let start = Double(sa[0]), limit = Double(la[0]), delta = Double(da[0])
            guard delta != 0 else { throw c.fail("delta is 0") }
            guard start.isFinite, limit.isFinite, delta.isFinite else { throw c.fail("start, limit and delta must be finite") }
            let steps = ((limit - start) / delta).rounded(.up)
            guard steps < Double(1 << 34) else { throw c.fail("range too large") }
            let n = try c.checkedCount([steps > 0 ? Int(steps) : 0])
            // Accumulate in the element type, as onnxruntime does.
            var v = [Float](repeating: 0, count: n)
            let fd = da[0]
            var acc = sa[0]
            for i in 0..<n { v[i] = acc; acc += fd }
            return [Tensor(dtype: s.dtype, shape: [n], storage: .float(s.dtype.rounded(v)))]
        case (.int(let sa), .int(let la), .int(let da)):
            let start = sa[0], limit = la[0], delta = da[0]
            guard delta != 0 else { throw c.fail("delta is 0") }
            let (diff, o) = limit.subtractingReportingOverflow(start)
            guard !o else { throw c.fail("range too large") }
            var count: UInt64 = 0
            if diff != 0 && (diff > 0) == (delta > 0) {
                let m = diff.magnitude, dm = delta.magnitude
                count = m / dm + (m % dm != 0 ? 1 : 0)
            }
            guard count < UInt64(1 << 34) else { throw c.fail("range too large") }
            let n = try c.checkedCount([Int(count)])
            var v = [Int64](repeating: 0, count: n)
            var acc = start
            for i in 0..<n { v[i] = s.dtype.wrap(acc); acc = acc &+ delta }
            return [Tensor(dtype: s.dtype, shape: [n], storage: .int(v))]
        default:
            throw c.fail("start, limit and delta must all be floating point or all integers")
        }
    }

    /// EyeLike: ones on the k-th diagonal of a 2-D tensor shaped like input 0.
    public static func eyeLike(_ c: KernelContext) throws -> [Tensor] {
        let x = try c.input(0)
        guard x.rank == 2 else { throw c.fail("EyeLike needs a 2-D input, got shape \(x.shape)") }
        let dtype = try dtypeAttribute(c, "dtype") ?? x.dtype
        let k = try c.int("k", default: 0)
        let rows = x.shape[0], cols = x.shape[1]
        var t = Tensor.zeros(x.shape, dtype: dtype)
        var ones: [Int] = []
        if k > -rows && k < cols {
            for i in max(0, -k)..<rows {
                let j = i + k
                if j >= cols { break }
                ones.append(i * cols + j)
            }
        }
        switch t.storage {
        case .float(var a): for i in ones { a[i] = 1 }; t.storage = .float(a)
        case .int(var a): for i in ones { a[i] = 1 }; t.storage = .int(a)
        case .bool(var a): for i in ones { a[i] = true }; t.storage = .bool(a)
        }
        return [t]
    }
}
