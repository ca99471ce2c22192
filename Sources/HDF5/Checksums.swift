/// The checksums HDF5 uses: Bob Jenkins' lookup3 `hashlittle` (every
/// checksummed metadata structure of the version 2 formats) and Fletcher-32
/// (the fletcher32 filter on raw data chunks).
enum Checksum {
    /// lookup3 `hashlittle` of `bytes` with initial value 0, as stored after HDF5 metadata.
    static func lookup3(_ bytes: ArraySlice<UInt8>, initial: UInt32 = 0) -> UInt32 {
        var a = 0xDEAD_BEEF &+ UInt32(truncatingIfNeeded: bytes.count) &+ initial
        var b = a
        var c = a
        var i = bytes.startIndex
        var remaining = bytes.count

        @inline(__always) func word(_ at: Int, _ count: Int) -> UInt32 {
            var w: UInt32 = 0
            for k in 0..<count { w |= UInt32(bytes[at + k]) << (8 * UInt32(k)) }
            return w
        }
        @inline(__always) func rot(_ x: UInt32, _ k: UInt32) -> UInt32 { (x << k) | (x >> (32 - k)) }

        while remaining > 12 {
            a &+= word(i, 4)
            b &+= word(i + 4, 4)
            c &+= word(i + 8, 4)
            // mix(a, b, c)
            a &-= c; a ^= rot(c, 4); c &+= b
            b &-= a; b ^= rot(a, 6); a &+= c
            c &-= b; c ^= rot(b, 8); b &+= a
            a &-= c; a ^= rot(c, 16); c &+= b
            b &-= a; b ^= rot(a, 19); a &+= c
            c &-= b; c ^= rot(b, 4); b &+= a
            i += 12
            remaining -= 12
        }
        if remaining == 0 { return c }
        // The last 1...12 bytes, zero-extended.
        a &+= word(i, min(remaining, 4))
        if remaining > 4 { b &+= word(i + 4, min(remaining - 4, 4)) }
        if remaining > 8 { c &+= word(i + 8, remaining - 8) }
        // final(a, b, c)
        c ^= b; c &-= rot(b, 14)
        a ^= c; a &-= rot(c, 11)
        b ^= a; b &-= rot(a, 25)
        c ^= b; c &-= rot(b, 16)
        a ^= c; a &-= rot(c, 4)
        b ^= a; b &-= rot(a, 14)
        c ^= b; c &-= rot(b, 24)
        return c
    }

    /// Fletcher-32 over big-endian 16-bit words (an odd last byte is the high
    /// byte of a last word), with HDF5's end-around-carry arithmetic: a sum
    /// that is a non-zero multiple of 65535 reads as 0xFFFF, not 0.
    static func fletcher32(_ bytes: ArraySlice<UInt8>) -> UInt32 {
        var sum1: UInt64 = 0
        var sum2: UInt64 = 0
        var i = bytes.startIndex
        let end = bytes.endIndex
        var pending = 0
        while i < end {
            let hi = UInt64(bytes[i])
            let lo: UInt64 = i + 1 < end ? UInt64(bytes[i + 1]) : 0
            sum1 += hi << 8 | lo
            sum2 += sum1
            i += 2
            pending += 1
            if pending == 360 {  // keep both sums far from overflow
                sum1 = fold(sum1)
                sum2 = fold(sum2)
                pending = 0
            }
        }
        return UInt32(reduce(sum2)) << 16 | UInt32(reduce(sum1))
    }

    /// One end-around-carry step of a ones'-complement sum modulo 65535.
    private static func fold(_ x: UInt64) -> UInt64 { (x & 0xFFFF) + (x >> 16) }

    /// `x` folded until it fits 16 bits (never 0 unless `x` is 0).
    private static func reduce(_ x: UInt64) -> UInt64 {
        var v = x
        while v > 0xFFFF { v = fold(v) }
        return v
    }
}
