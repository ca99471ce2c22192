import ShrinkwrapIR

/// Comparisons, boolean logic, bitwise ops, Where and BitShift (numpy broadcasting).
public enum LogicKernels {
    // MARK: comparisons → bool

    enum Comparison { case eq, gt, lt, ge, le }

    struct Eq<T: Comparable>: EWBinaryOp { @inline(__always) func callAsFunction(_ a: T, _ b: T) -> Bool { a == b } }
    struct Gt<T: Comparable>: EWBinaryOp { @inline(__always) func callAsFunction(_ a: T, _ b: T) -> Bool { a > b } }
    struct Lt<T: Comparable>: EWBinaryOp { @inline(__always) func callAsFunction(_ a: T, _ b: T) -> Bool { a < b } }
    struct Ge<T: Comparable>: EWBinaryOp { @inline(__always) func callAsFunction(_ a: T, _ b: T) -> Bool { a >= b } }
    struct Le<T: Comparable>: EWBinaryOp { @inline(__always) func callAsFunction(_ a: T, _ b: T) -> Bool { a <= b } }

    @inline(__always)
    static func compare<T: Comparable>(_ x: [T], _ y: [T], _ p: EWKit.Plan, _ cmp: Comparison, threads: Int) -> [Bool] {
        let g = EWKit.cheapGrain
        switch cmp {
        case .eq: return EWKit.map2(x, y, p, threads: threads, grain: g, Eq<T>())
        case .gt: return EWKit.map2(x, y, p, threads: threads, grain: g, Gt<T>())
        case .lt: return EWKit.map2(x, y, p, threads: threads, grain: g, Lt<T>())
        case .ge: return EWKit.map2(x, y, p, threads: threads, grain: g, Ge<T>())
        case .le: return EWKit.map2(x, y, p, threads: threads, grain: g, Le<T>())
        }
    }

    /// A broadcasting comparison. Floats compare as floats, integers as
    /// integers (uint64 in unsigned order), bools as 0/1; mixed storage
    /// classes or integer types compare by value as Double.
    static func compare(_ c: KernelContext, _ cmp: Comparison) throws -> [Tensor] {
        let a = try c.input(0), b = try c.input(1)
        let p = try EWKit.plan(c, [a.shape, b.shape])
        let th = c.threads
        let r: [Bool]
        switch (a.storage, b.storage) {
        case (.float(let x), .float(let y)):
            r = compare(x, y, p, cmp, threads: th)
        case (.int(let x), .int(let y)) where a.dtype == b.dtype || (a.dtype != .uint64 && b.dtype != .uint64):
            if a.dtype == .uint64 {
                r = compare(x.map { $0 ^ Int64.min }, y.map { $0 ^ Int64.min }, p, cmp, threads: th)
            } else {
                r = compare(x, y, p, cmp, threads: th)
            }
        case (.bool(let x), .bool(let y)):
            r = compare(x.map { $0 ? Int64(1) : 0 }, y.map { $0 ? Int64(1) : 0 }, p, cmp, threads: th)
        default:
            let x = a.dtype == .uint64 ? (a.ints ?? []).map { Double(UInt64(bitPattern: $0)) } : a.doubles
            let y = b.dtype == .uint64 ? (b.ints ?? []).map { Double(UInt64(bitPattern: $0)) } : b.doubles
            r = compare(x, y, p, cmp, threads: th)
        }
        return [Tensor(bools: r, shape: p.shape)]
    }

    public static func equal(_ c: KernelContext) throws -> [Tensor] { try compare(c, .eq) }
    public static func greater(_ c: KernelContext) throws -> [Tensor] { try compare(c, .gt) }
    public static func less(_ c: KernelContext) throws -> [Tensor] { try compare(c, .lt) }
    public static func greaterOrEqual(_ c: KernelContext) throws -> [Tensor] { try compare(c, .ge) }
    public static func lessOrEqual(_ c: KernelContext) throws -> [Tensor] { try compare(c, .le) }

    // MARK: boolean logic

    struct AndOp: EWBinaryOp { @inline(__always) func callAsFunction(_ a: Bool, _ b: Bool) -> Bool { a && b } }
    struct OrOp: EWBinaryOp { @inline(__always) func callAsFunction(_ a: Bool, _ b: Bool) -> Bool { a || b } }
    struct XorOp: EWBinaryOp { @inline(__always) func callAsFunction(_ a: Bool, _ b: Bool) -> Bool { a != b } }
    struct NotOp: EWUnaryOp { @inline(__always) func callAsFunction(_ a: Bool) -> Bool { !a } }

    @inline(__always)
    static func logic<Op: EWBinaryOp>(_ c: KernelContext, _ op: Op) throws -> [Tensor] where Op.A == Bool, Op.B == Bool, Op.R == Bool {
        let a = try c.input(0), b = try c.input(1)
        guard let x = a.bools, let y = b.bools else {
            throw c.fail("inputs must be bool, got \(a.dtype) and \(b.dtype)")
        }
        let p = try EWKit.plan(c, [a.shape, b.shape])
        return [Tensor(bools: EWKit.map2(x, y, p, threads: c.threads, grain: EWKit.cheapGrain, op), shape: p.shape)]
    }

    public static func and(_ c: KernelContext) throws -> [Tensor] { try logic(c, AndOp()) }
    public static func or(_ c: KernelContext) throws -> [Tensor] { try logic(c, OrOp()) }
    public static func xor(_ c: KernelContext) throws -> [Tensor] { try logic(c, XorOp()) }

    public static func not(_ c: KernelContext) throws -> [Tensor] {
        let t = try c.input(0)
        guard let x = t.bools else { throw c.fail("input must be bool, got \(t.dtype)") }
        return [Tensor(bools: EWKit.map1(x, threads: c.threads, grain: EWKit.cheapGrain, NotOp()), shape: t.shape)]
    }

    // MARK: bitwise

    struct BitAnd: EWBinaryOp { @inline(__always) func callAsFunction(_ a: Int64, _ b: Int64) -> Int64 { a & b } }
    struct BitOr: EWBinaryOp { @inline(__always) func callAsFunction(_ a: Int64, _ b: Int64) -> Int64 { a | b } }
    struct BitXor: EWBinaryOp { @inline(__always) func callAsFunction(_ a: Int64, _ b: Int64) -> Int64 { a ^ b } }
    struct BitNot: EWUnaryOp { @inline(__always) func callAsFunction(_ a: Int64) -> Int64 { ~a } }

    /// A broadcasting bitwise op on integers (values are sign-extended, so
    /// the bits of every narrower type come out right after wrapping).
    @inline(__always)
    static func bitwise<Op: EWBinaryOp>(_ c: KernelContext, _ op: Op) throws -> [Tensor] where Op.A == Int64, Op.B == Int64, Op.R == Int64 {
        let a = try c.input(0), b = try c.input(1)
        guard let x = a.ints, let y = b.ints else { throw c.fail("inputs must be integers, got \(a.dtype) and \(b.dtype)") }
        let p = try EWKit.plan(c, [a.shape, b.shape])
        return [EWKit.intTensor(EWKit.map2(x, y, p, threads: c.threads, grain: EWKit.cheapGrain, op), p.shape, a.dtype)]
    }

    public static func bitwiseAnd(_ c: KernelContext) throws -> [Tensor] { try bitwise(c, BitAnd()) }
    public static func bitwiseOr(_ c: KernelContext) throws -> [Tensor] { try bitwise(c, BitOr()) }
    public static func bitwiseXor(_ c: KernelContext) throws -> [Tensor] { try bitwise(c, BitXor()) }

    public static func bitwiseNot(_ c: KernelContext) throws -> [Tensor] {
        let t = try c.input(0)
        guard let x = t.ints else { throw c.fail("input must be an integer tensor, got \(t.dtype)") }
        return [EWKit.intTensor(EWKit.map1(x, threads: c.threads, grain: EWKit.cheapGrain, BitNot()), t.shape, t.dtype)]
    }

    // MARK: Where

    struct Select<T>: EWTernaryOp { @inline(__always) func callAsFunction(_ s: Bool, _ a: T, _ b: T) -> T { s ? a : b } }

    /// Where(condition, X, Y): X where condition is true, else Y; all three broadcast.
    public static func `where`(_ c: KernelContext) throws -> [Tensor] {
        let cond = try c.input(0), a = try c.input(1), b = try c.input(2)
        guard let m = cond.bools else { throw c.fail("condition must be bool, got \(cond.dtype)") }
        let p = try EWKit.plan(c, [cond.shape, a.shape, b.shape])
        let th = c.threads, grain = EWKit.cheapGrain
        switch (a.storage, b.storage) {
        case (.float(let x), .float(let y)):
            let r = EWKit.map3(m, x, y, p, threads: th, grain: grain, Select<Float>())
            return [Tensor(dtype: a.dtype, shape: p.shape, storage: .float(r))]
        case (.int(let x), .int(let y)):
            let r = EWKit.map3(m, x, y, p, threads: th, grain: grain, Select<Int64>())
            return [Tensor(dtype: a.dtype, shape: p.shape, storage: .int(r))]
        case (.bool(let x), .bool(let y)):
            let r = EWKit.map3(m, x, y, p, threads: th, grain: grain, Select<Bool>())
            return [Tensor(bools: r, shape: p.shape)]
        default:
            throw c.fail("X and Y must have the same type, got \(a.dtype) and \(b.dtype)")
        }
    }

    // MARK: BitShift

    struct ShiftLeft: EWBinaryOp {
        let dtype: DType, width: Int64
        @inline(__always) func callAsFunction(_ u: Int64, _ s: Int64) -> Int64 { (s < 0 || s >= width) ? 0 : dtype.wrap(u << s) }
    }
    struct ShiftRight: EWBinaryOp {
        let width: Int64
        @inline(__always) func callAsFunction(_ u: Int64, _ s: Int64) -> Int64 { (s < 0 || s >= width) ? (u < 0 ? -1 : 0) : u >> s }
    }
    struct ShiftRightU64: EWBinaryOp {
        @inline(__always) func callAsFunction(_ u: Int64, _ s: Int64) -> Int64 {
            (s < 0 || s >= 64) ? 0 : Int64(bitPattern: UInt64(bitPattern: u) >> UInt64(s))
        }
    }

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
        let th = c.threads, g = EWKit.cheapGrain
        let r: [Int64]
        if direction == "LEFT" {
            r = EWKit.map2(x, y, p, threads: th, grain: g, ShiftLeft(dtype: dt, width: width))
        } else if dt == .uint64 {
            r = EWKit.map2(x, y, p, threads: th, grain: g, ShiftRightU64())
        } else {
            r = EWKit.map2(x, y, p, threads: th, grain: g, ShiftRight(width: width))
        }
        return [Tensor(dtype: dt, shape: p.shape, storage: .int(r))]
    }
}
