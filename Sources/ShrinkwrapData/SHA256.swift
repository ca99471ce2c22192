import Foundation

/// SHA-256 (FIPS 180-4) digests as lowercase hex strings.
public enum SHA256 {
    public static func hex(_ data: Data) -> String {
        var h = SHA256Hasher()
        h.update(data)
        return hexString(h.finalize())
    }

    public static func hex(_ bytes: [UInt8]) -> String {
        var h = SHA256Hasher()
        h.update(bytes)
        return hexString(h.finalize())
    }

    /// Lowercase hex of a byte string.
    public static func hexString(_ digest: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(digest.count * 2)
        for b in digest {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// An incremental SHA-256: feed bytes with `update`, then read the 32-byte
/// digest with `finalize` (which does not change the hasher, so more bytes
/// can follow and `finalize` gives the digest of everything so far).
public struct SHA256Hasher: Sendable {
    private static let k: [UInt32] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
    ]

    private var state: [UInt32] = [
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
    ]
    /// Bytes not yet forming a whole 64-byte block (fewer than 64).
    private var pending: [UInt8] = []
    /// Total bytes fed so far.
    private var length: UInt64 = 0

    public init() { pending.reserveCapacity(64) }

    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        length &+= UInt64(bytes.count)
        var i = 0
        if !pending.isEmpty {
            let take = min(64 - pending.count, bytes.count)
            pending.append(contentsOf: bytes[0..<take])
            i = take
            if pending.count == 64 {
                let block = pending
                block.withUnsafeBytes { Self.compress(&state, $0, at: 0) }
                pending.removeAll(keepingCapacity: true)
            }
        }
        while bytes.count - i >= 64 {
            Self.compress(&state, bytes, at: i)
            i += 64
        }
        if i < bytes.count { pending.append(contentsOf: bytes[i...]) }
    }

    public mutating func update(_ bytes: [UInt8]) { bytes.withUnsafeBytes { update($0) } }

    public mutating func update(_ data: Data) { data.withUnsafeBytes { update($0) } }

    /// The digest of everything fed so far (32 bytes).
    public func finalize() -> [UInt8] {
        var copy = self
        let bitLength = length &* 8
        var tail: [UInt8] = [0x80]
        let afterPad = (pending.count + 1) % 64
        tail.append(contentsOf: repeatElement(0, count: afterPad <= 56 ? 56 - afterPad : 120 - afterPad))
        for shift in stride(from: 56, through: 0, by: -8) { tail.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift))) }
        let savedLength = copy.length
        copy.update(tail)
        copy.length = savedLength
        var out: [UInt8] = []
        out.reserveCapacity(32)
        for w in copy.state {
            out.append(UInt8(truncatingIfNeeded: w >> 24))
            out.append(UInt8(truncatingIfNeeded: w >> 16))
            out.append(UInt8(truncatingIfNeeded: w >> 8))
            out.append(UInt8(truncatingIfNeeded: w))
        }
        return out
    }

    /// One 64-byte block at `offset` of `p` (the caller guarantees 64 bytes are there).
    private static func compress(_ h: inout [UInt32], _ p: UnsafeRawBufferPointer, at offset: Int) {
        var w = [UInt32](repeating: 0, count: 64)
        for t in 0..<16 {
            let b = offset + 4 * t
            w[t] = UInt32(p[b]) << 24 | UInt32(p[b + 1]) << 16 | UInt32(p[b + 2]) << 8 | UInt32(p[b + 3])
        }
        @inline(__always) func rotr(_ x: UInt32, _ n: UInt32) -> UInt32 { x >> n | x << (32 - n) }
        for t in 16..<64 {
            let s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3)
            let s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10)
            w[t] = w[t - 16] &+ s0 &+ w[t - 7] &+ s1
        }
        var a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7]
        for t in 0..<64 {
            let bigS1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)
            let ch = (e & f) ^ (~e & g)
            let t1 = hh &+ bigS1 &+ ch &+ k[t] &+ w[t]
            let bigS0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)
            let maj = (a & b) ^ (a & c) ^ (b & c)
            let t2 = bigS0 &+ maj
            hh = g; g = f; f = e; e = d &+ t1
            d = c; c = b; b = a; a = t1 &+ t2
        }
        h[0] &+= a; h[1] &+= b; h[2] &+= c; h[3] &+= d
        h[4] &+= e; h[5] &+= f; h[6] &+= g; h[7] &+= hh
    }
}
