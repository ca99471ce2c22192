/// IEEE 754 binary16 and bfloat16 conversions, written out so they behave the
/// same on every platform (Swift's `Float16` is missing on macOS/x86_64).
public enum Half {
    /// float32 → binary16 bits, round to nearest even; overflow gives ±inf,
    /// NaN stays NaN (quiet).
    @inlinable
    public static func bits(from value: Float) -> UInt16 {
        let x = value.bitPattern
        let sign = UInt16((x >> 16) & 0x8000)
        let exp = Int((x >> 23) & 0xFF)
        var mant = x & 0x7F_FFFF
        if exp == 0xFF {  // inf or NaN
            return sign | 0x7C00 | (mant != 0 ? 0x200 | UInt16(truncatingIfNeeded: mant >> 13) : 0)
        }
        let e = exp - 127 + 15
        if e >= 0x1F { return sign | 0x7C00 }
        if e <= 0 {
            // Subnormal or zero in half precision.
            if e < -10 { return sign }
            mant |= 0x80_0000
            let shift = UInt32(14 - e)
            let half = UInt32(1) << (shift - 1)
            let rest = mant & ((UInt32(1) << shift) - 1)
            var h = mant >> shift
            if rest > half || (rest == half && (h & 1) == 1) { h += 1 }
            return sign | UInt16(truncatingIfNeeded: h)
        }
        var h = (UInt32(e) << 10) | (mant >> 13)
        let rest = mant & 0x1FFF
        if rest > 0x1000 || (rest == 0x1000 && (h & 1) == 1) { h += 1 }  // may carry into exponent: correct
        return sign | UInt16(truncatingIfNeeded: h)
    }

    /// binary16 bits → float32 (exact).
    @inlinable
    public static func float(fromBits h: UInt16) -> Float {
        let sign = UInt32(h & 0x8000) << 16
        let exp = UInt32((h >> 10) & 0x1F)
        let mant = UInt32(h & 0x3FF)
        if exp == 0 {
            if mant == 0 { return Float(bitPattern: sign) }
            // Subnormal: value = mant * 2^-24.
            let v = Float(mant) * Float(bitPattern: 0x3380_0000)  // 2^-24
            return sign != 0 ? -v : v
        }
        if exp == 0x1F { return Float(bitPattern: sign | 0x7F80_0000 | (mant << 13)) }
        return Float(bitPattern: sign | ((exp + 112) << 23) | (mant << 13))
    }

    /// Rounds a float32 to the nearest binary16 value, returned as float32.
    @inlinable
    public static func round(_ value: Float) -> Float { float(fromBits: bits(from: value)) }

    /// float32 → bfloat16 bits, round to nearest even.
    @inlinable
    public static func bfloatBits(from value: Float) -> UInt16 {
        let x = value.bitPattern
        if value.isNaN { return UInt16(truncatingIfNeeded: x >> 16) | 0x40 }
        let rounding = ((x >> 16) & 1) + 0x7FFF
        return UInt16(truncatingIfNeeded: (x &+ rounding) >> 16)
    }

    @inlinable
    public static func float(fromBFloatBits b: UInt16) -> Float { Float(bitPattern: UInt32(b) << 16) }

    /// The largest finite binary16 value.
    public static let maxFinite: Float = 65504
}
