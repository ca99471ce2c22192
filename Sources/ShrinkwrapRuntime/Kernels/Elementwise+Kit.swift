import ShrinkwrapIR

// EWKit, shared by the elementwise kernel families: parallel grains, a fast exp, dtype finishing, kernel builders.

// MARK: - Shared machinery

/// Helpers shared by the elementwise kernel families.
enum EWKit {
    /// Minimum elements per parallel chunk for a cheap per-element op
    /// (add, relu): below this, threading costs more than it saves.
    static let cheapGrain = 1 << 18
    /// Minimum elements per parallel chunk for a costly op (exp, erf, pow).
    static let costlyGrain = 1 << 14

    // MARK: dtype finishing

    /// Wraps integer values into `dtype`'s range (a no-op for 64-bit types).
    static func wrapInPlace(_ v: inout [Int64], _ dtype: DType) {
        switch dtype {
        case .int8, .int16, .int32, .uint8, .uint16, .uint32:
            v.withUnsafeMutableBufferPointer { p in
                for i in p.indices { p[i] = dtype.wrap(p[i]) }
            }
        default:
            break
        }
    }

    /// A float tensor of `dtype`, its values rounded to that dtype.
    static func floatTensor(_ v: [Float], _ shape: [Int], _ dtype: DType) -> Tensor {
        Tensor(dtype: dtype, shape: shape, storage: .float(dtype.rounded(v)))
    }

    /// An integer tensor of `dtype`, its values wrapped into that dtype.
    static func intTensor(_ v: [Int64], _ shape: [Int], _ dtype: DType) -> Tensor {
        switch dtype {
        case .int8, .int16, .int32, .uint8, .uint16, .uint32:
            var r = v
            wrapInPlace(&r, dtype)
            return Tensor(dtype: dtype, shape: shape, storage: .int(r))
        default:
            return Tensor(dtype: dtype, shape: shape, storage: .int(v))
        }
    }

    /// XOR mask that maps the unsigned order of uint64 bit patterns onto the
    /// signed order of Int64 (0 for every other integer type).
    @inline(__always)
    static func orderFlip(_ dtype: DType) -> Int64 { dtype == .uint64 ? Int64.min : 0 }

    /// Smallest and largest value of an integer dtype, as stored (uint64's
    /// maximum is the bit pattern -1).
    static func intRange(_ dtype: DType) -> (min: Int64, max: Int64) {
        switch dtype {
        case .int8: return (Int64(Int8.min), Int64(Int8.max))
        case .int16: return (Int64(Int16.min), Int64(Int16.max))
        case .int32: return (Int64(Int32.min), Int64(Int32.max))
        case .uint8: return (0, Int64(UInt8.max))
        case .uint16: return (0, Int64(UInt16.max))
        case .uint32: return (0, Int64(UInt32.max))
        case .uint64: return (0, -1)
        default: return (Int64.min, Int64.max)
        }
    }

    /// Int64 of a float, truncated toward zero; NaN gives 0 and values
    /// beyond Int64 saturate (never traps).
    @inline(__always)
    static func truncatedInt(_ x: Float) -> Int64 {
        if x.isNaN { return 0 }
        if x >= 9.223372e18 { return Int64.max }
        if x <= -9.223372e18 { return Int64.min }
        return Int64(x)
    }

    /// Same as `truncatedInt` for a Double.
    @inline(__always)
    static func truncatedInt(_ x: Double) -> Int64 {
        if x.isNaN { return 0 }
        if x >= 9.223372036854775e18 { return Int64.max }
        if x <= -9.223372036854775e18 { return Int64.min }
        return Int64(x)
    }

    /// An integer value as Double (uint64 bit patterns read as unsigned).
    @inline(__always)
    static func doubleOf(_ v: Int64, _ dtype: DType) -> Double {
        dtype == .uint64 ? Double(UInt64(bitPattern: v)) : Double(v)
    }

    /// Float elements of any storage class (ints and bools converted).
    static func asFloats(_ t: Tensor) -> [Float] {
        switch t.storage {
        case .float(let a): return a
        case .int(let a):
            if t.dtype == .uint64 { return a.map { Float(UInt64(bitPattern: $0)) } }
            return a.map { Float($0) }
        case .bool(let a): return a.map { $0 ? 1 : 0 }
        }
    }

    // MARK: kernel builders

    /// A unary op on floats only.
    @inline(__always)
    static func unary<F: EWUnaryOp>(_ c: KernelContext, grain: Int = cheapGrain, _ f: F) throws -> [Tensor]
    where F.A == Float, F.R == Float {
        let t = try c.input(0)
        guard let x = t.floats else { throw c.fail("input must be floating point, got \(t.dtype)") }
        return [floatTensor(map1(x, threads: c.threads, grain: grain, f), t.shape, t.dtype)]
    }

    /// A unary op on floats only, run by CKernels' vectorised math.
    static func unary(_ c: KernelContext, _ f: SIMDKernels.Unary) throws -> [Tensor] {
        let t = try c.input(0)
        guard let x = t.floats else { throw c.fail("input must be floating point, got \(t.dtype)") }
        return [floatTensor(SIMDKernels.map(f, x, threads: c.threads), t.shape, t.dtype)]
    }

    /// A unary op on floats and integers (integer results wrapped into the input dtype).
    @inline(__always)
    static func unary<F: EWUnaryOp, I: EWUnaryOp>(_ c: KernelContext, grain: Int = cheapGrain, _ f: F, int g: I) throws -> [Tensor]
    where F.A == Float, F.R == Float, I.A == Int64, I.R == Int64 {
        let t = try c.input(0)
        switch t.storage {
        case .float(let x):
            return [floatTensor(map1(x, threads: c.threads, grain: grain, f), t.shape, t.dtype)]
        case .int(let x):
            return [intTensor(map1(x, threads: c.threads, grain: cheapGrain, g), t.shape, t.dtype)]
        case .bool:
            throw c.fail("input must be numeric, got bool")
        }
    }

    /// A binary op with broadcasting on floats and integers: the two inputs
    /// must share a storage class; the result has input 0's dtype.
    @inline(__always)
    static func binary<F: EWBinaryOp, I: EWBinaryOp>(_ c: KernelContext, grain: Int = cheapGrain, _ f: F, int g: I) throws -> [Tensor]
    where F.A == Float, F.B == Float, F.R == Float, I.A == Int64, I.B == Int64, I.R == Int64 {
        let a = try c.input(0), b = try c.input(1)
        let p = try plan(c, [a.shape, b.shape])
        switch (a.storage, b.storage) {
        case (.float(let x), .float(let y)):
            return [floatTensor(map2(x, y, p, threads: c.threads, grain: grain, f), p.shape, a.dtype)]
        case (.int(let x), .int(let y)):
            return [intTensor(map2(x, y, p, threads: c.threads, grain: cheapGrain, g), p.shape, a.dtype)]
        default:
            throw c.fail("inputs must both be floating point or both integer, got \(a.dtype) and \(b.dtype)")
        }
    }

    /// Folds the inputs left to right with a broadcasting binary op; returns
    /// the unrounded result and the number of inputs.
    @inline(__always)
    static func variadic<F: EWBinaryOp, I: EWBinaryOp>(_ c: KernelContext, _ f: F, int g: I) throws -> (Tensor, Int)
    where F.A == Float, F.B == Float, F.R == Float, I.A == Int64, I.B == Int64, I.R == Int64 {
        var present: [Tensor] = []
        for case let t? in c.inputs { present.append(t) }
        guard let first = present.first else { throw c.fail("needs at least one input") }
        _ = try plan(c, present.map(\.shape))  // checks compatibility and size once
        var acc = first
        for t in present.dropFirst() {
            let p = try plan(c, [acc.shape, t.shape])
            switch (acc.storage, t.storage) {
            case (.float(let x), .float(let y)):
                acc = Tensor(dtype: first.dtype, shape: p.shape,
                             storage: .float(map2(x, y, p, threads: c.threads, grain: cheapGrain, f)))
            case (.int(let x), .int(let y)):
                acc = Tensor(dtype: first.dtype, shape: p.shape,
                             storage: .int(map2(x, y, p, threads: c.threads, grain: cheapGrain, g)))
            default:
                throw c.fail("inputs must all be floating point or all integer, got \(first.dtype) and \(t.dtype)")
            }
        }
        return (acc, present.count)
    }

    /// Fails when an integer divisor contains a zero (C/ONNX leave it undefined).
    static func checkNoZero(_ c: KernelContext, _ t: Tensor) throws {
        if let v = t.ints, v.contains(0) { throw c.fail("integer division by zero") }
    }
}
