/// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of
/// LevelDB-style table blocks and of tensor bundle data, and the "mask" both
/// formats apply before storing one (so that a CRC of bytes holding CRCs does
/// not degenerate).
enum CRC32C {
    /// Eight 256-entry tables, one after another, for slicing by 8 bytes:
    /// table k maps a byte to its CRC contribution k bytes further on.
    static let tables: [UInt32] = {
        var t = [UInt32](repeating: 0, count: 8 * 256)
        for n in 0..<256 {
            var c = UInt32(n)
            for _ in 0..<8 { c = (c & 1) != 0 ? (c >> 1) ^ 0x82F6_3B78 : c >> 1 }
            t[n] = c
        }
        for k in 1..<8 {
            for n in 0..<256 {
                let previous = t[(k - 1) * 256 + n]
                t[k * 256 + n] = (previous >> 8) ^ t[Int(previous & 0xFF)]
            }
        }
        return t
    }()

    /// The CRC of `bytes`, continuing `crc` (the CRC of what came before; 0 to start).
    static func checksum(_ bytes: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
        tables.withUnsafeBufferPointer { t in
            var c = ~crc
            var i = 0
            let n = bytes.count
            while i + 8 <= n {
                let lo = c ^ (UInt32(bytes[i]) | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2]) << 16 | UInt32(bytes[i + 3]) << 24)
                let hi = UInt32(bytes[i + 4]) | UInt32(bytes[i + 5]) << 8 | UInt32(bytes[i + 6]) << 16 | UInt32(bytes[i + 7]) << 24
                c = t[7 * 256 + Int(lo & 0xFF)] ^ t[6 * 256 + Int((lo >> 8) & 0xFF)]
                    ^ t[5 * 256 + Int((lo >> 16) & 0xFF)] ^ t[4 * 256 + Int(lo >> 24)]
                    ^ t[3 * 256 + Int(hi & 0xFF)] ^ t[2 * 256 + Int((hi >> 8) & 0xFF)]
                    ^ t[256 + Int((hi >> 16) & 0xFF)] ^ t[Int(hi >> 24)]
                i += 8
            }
            while i < n {
                c = (c >> 8) ^ t[Int((c ^ UInt32(bytes[i])) & 0xFF)]
                i += 1
            }
            return ~c
        }
    }

    static func checksum(_ bytes: ArraySlice<UInt8>, continuing crc: UInt32 = 0) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0, continuing: crc) }
    }

    /// The stored form of a CRC: rotated right by 15 bits, plus a constant.
    static func mask(_ crc: UInt32) -> UInt32 { ((crc >> 15) | (crc << 17)) &+ 0xA282_EAD8 }

    static func unmask(_ masked: UInt32) -> UInt32 {
        let rotated = masked &- 0xA282_EAD8
        return (rotated >> 17) | (rotated << 15)
    }
}
