import ShrinkwrapIR

/// Comparisons, boolean logic, Where and BitShift (numpy broadcasting).
public enum LogicKernels {
    // MARK: comparisons → bool

    /// A broadcasting comparison. Floats compare as floats, integers as
    /// integers (uint64 in unsigned order), bools as 0/1; mixed storage
    /// classes compare by value as Double.
    @inline(__always)
    static func compare(_ c: KernelContext, _ f: (Float, Float) -> Bool, int g: (Int64, Int64) -> Bool,
                        double h: (Double, Double) -> Bool) throws -> [Tensor] {
        let a = try c.input(0), b = try c.input(1)
        let p = try EWKit.plan(c, [a.shape, b.shape])
        let th = c.threads, grain = EWKit.cheapGrain
        let r: [Bool]
        switch (a.storage, b.storage) {
        case (.float(let x), .float(let y)):
            r = EWKit.map2(x, y, p, threads: th, grain: grain, f)
        case (.int(let x), .int(let y)) where a.dtype == .uint64 || b.dtype == .uint64:
            if a.dtype != b.dtype {
                r = EWKit.map2(x, y, p, threads: th, grain: grain) { u, v in
                    h(EWKit.doubleOf(u, a.dtype), EWKit.doubleOf(v, b.dtype))
                }
            } else {
                r = EWKit.map2(x, y, p, threads: th, grain: grain) { u, v in g(u ^ Int64.min, v ^ Int64.min) }
            }
        case (.int(let x), .int(let y)):
            r = EWKit.map2(x, y, p, threads: th, grain: grain, g)
        case (.bool(let x), .bool(let y)):
            r = EWKit.map2(x, y, p, threads: th, grain: grain) { u, v in g(u ? 1 : 0, v ? 1 : 0) }
        default:
            let x = a.doubles, y = b.doubles
            r = EWKit.map2(x, y, p, threads: th, grain: grain, h)
        }
        return [Tensor(bools: r, shape: p.shape)]
    }

    public static func equal(_ c: KernelContext) throws -> [Tensor] {
        try compare(c, { $0 == $1 }, int: { $0 == $1 }, double: { $0 == $1 })
    }

    public static func greater(_ c: KernelContext) throws -> [Tensor] {
        try compare(c, { $0 > $1 }, int: { $0 > $1 }, double: { $0 > $1 })
    }

    public static func less(_ c: KernelContext) throws -> [Tensor] {
        try compare(c, { $0 < $1 }, int: { $0 < $1 }, double: { $0 < $1 })
    }

    public static func greaterOrEqual(_ c: KernelContext) throws -> [Tensor] {
        try compare(c, { $0 >= $1 }, int: { $0 >= $1 }, double: { $0 >= $1 })
    }

    public static func lessOrEqual(_ c: KernelContext) throws -> [Tensor] {
        try compare(c, { $0 <= $1 }, int: { $0 <= $1 }, double: { $0 <= $1 })
    }

    // MARK: boolean logic

    @inline(__always)
    static func logic(_ c: KernelContext, _ f: (Bool, Bool) -> Bool) throws -> [Tensor] {
        let a = try c.input(0), b = try c.input(1)
        guard let x = a.bools, let y = b.bools else {
            throw c.fail("inputs must be bool, got \(a.dtype) and \(b.dtype)")
        }
        let p = try EWKit.plan(c, [a.shape, b.shape])
        return [Tensor(bools: EWKit.map2(x, y, p, threads: c.threads, grain: EWKit.cheapGrain, f), shape: p.shape)]
    }

    public static func and(_ c: KernelContext) throws -> [Tensor] { try logic(c) { $0 && $1 } }
    public static func or(_ c: KernelContext) throws -> [Tensor] { try logic(c) { $0 || $1 } }
    public static func xor(_ c: KernelContext) throws -> [Tensor] { try logic(c) { $0 != $1 } }

    public static func not(_ c: KernelContext) throws -> [Tensor] {
        let t = try c.input(0)
        guard let x = t.bools else { throw c.fail("input must be bool, got \(t.dtype)") }
        return [Tensor(bools: EWKit.map1(x, threads: c.threads, grain: EWKit.cheapGrain) { !$0 }, shape: t.shape)]
    }

    // MARK: Where

    /// Where(condition, X, Y): X where condition is true, else Y; all three broadcast.
    public static func `where`(_ c: KernelContext) throws -> [Tensor] {
        let cond = try c.input(0), a = try c.input(1), b = try c.input(2)
        guard let m = cond.bools else { throw c.fail("condition must be bool, got \(cond.dtype)") }
        let p = try EWKit.plan(c, [cond.shape, a.shape, b.shape])
        let th = c.threads, grain = EWKit.cheapGrain
        switch (a.storage, b.storage) {
        case (.float(let x), .float(let y)):
            let r = EWKit.map3(m, x, y, p, threads: th, grain: grain) { s, u, v in s ? u : v }
            return [Tensor(dtype: a.dtype, shape: p.shape, storage: .float(r))]
        case (.int(let x), .int(let y)):
            let r = EWKit.map3(m, x, y, p, threads: th, grain: grain) { s, u, v in s ? u : v }
            return [Tensor(dtype: a.dtype, shape: p.shape, storage: .int(r))]
        case (.bool(let x), .bool(let y)):
            let r = EWKit.map3(m, x, y, p, threads: th, grain: grain) { s, u, v in s ? u : v }
            return [Tensor(bools: r, shape: p.shape)]
        default:
            throw c.fail("X and Y must have the same type, got \(a.dtype) and \(b.dtype)")
        }
    }

    // MARK: BitShift

    /// BitShift (direction LEFT / RIGHT) on integers. Shifts outside
    /// [0, bit width) give 0 (or -1 for a right shift of a negative signed
    /// value); left shifts wrap; right shifts of signed values are arithmetic.
    public static func bitShift(_ c: KernelContext) throws -> [Tensor] {
        let a = try c.input(0), b = try c.input(1)
        let direction = try c.string("direction", default: "")
        guard direction == "LEFT" || direction == "RIGHT" else {
            throw c.badAttribute("direction", "must be LEFT or RIGHT, got '\(direction)'")
        }
        guard let x = a.ints, let y = b.ints else { throw c.fail("inputs must be integers, got \(a.dtype) and \(b.dtype)") }
        let p = try EWKit.plan(c, [a.shape, b.shape])
        let dt = a.dtype
        let width = Int64(dt.byteWidth * 8)
        let r: [Int64]
        if direction == "LEFT" {
            r = EWKit.map2(x, y, p, threads: c.threads, grain: EWKit.cheapGrain) { u, s in
                (s < 0 || s >= width) ? 0 : dt.wrap(u << s)
            }
        } else if dt == .uint64 {
            r = EWKit.map2(x, y, p, threads: c.threads, grain: EWKit.cheapGrain) { u, s in
                (s < 0 || s >= width) ? 0 : Int64(bitPattern: UInt64(bitPattern: u) >> UInt64(s))
            }
        } else {
            r = EWKit.map2(x, y, p, threads: c.threads, grain: EWKit.cheapGrain) { u, s in
                (s < 0 || s >= width) ? (u < 0 ? -1 : 0) : u >> s
            }
        }
        return [Tensor(dtype: dt, shape: p.shape, storage: .int(r))]
    }
}
