/// Packs n-bit codes into bytes, in the orders the formats need. One place,
/// tested against hand-made byte vectors and against the peers' own helpers.
///
/// - `msbFirst` — Core ML NeuralNetwork `rawValue`: the codes form one bit
///   stream, each code most-significant bit first, and the stream fills each
///   byte from bit 7 down to bit 0. Codes `[1, 2, 3]` at 2 bits → `0b01_10_11_00`.
/// - `lsbFirst` — Core ML ML Program (and ONNX 4-bit, where it means "first
///   element in the low nibble"): code i occupies bits `[i·n, i·n + n)` of a
///   little-endian bit stream, so the first code sits in the low bits of
///   byte 0. Codes `[1, 2, 3]` at 2 bits → `0b00_11_10_01`.
///
/// Unused trailing bits of the last byte are zero. Signed codes are packed as
/// their n-bit two's complement.
public enum BitOrder: String, Sendable, CaseIterable {
    case msbFirst, lsbFirst

    /// Core ML NeuralNetwork `WeightParams.rawValue`.
    public static let coreMLNeuralNetwork = BitOrder.msbFirst
    /// Core ML ML Program packed sub-byte tensors.
    public static let coreMLProgram = BitOrder.lsbFirst
    /// ONNX INT4 / UINT4 tensors: low nibble first.
    public static let onnx4Bit = BitOrder.lsbFirst
}

public enum BitPacking {
    /// Bytes needed for `count` codes of `bits` bits.
    public static func byteCount(count: Int, bits: Int) -> Int { (count * bits + 7) / 8 }

    /// Packs the low `bits` bits of every code.
    public static func pack<C: Collection>(_ codes: C, bits: Int, order: BitOrder) -> [UInt8] where C.Element: BinaryInteger {
        // The low 8 bits of a code hold every bit packed (bits ≤ 8).
        pack(codes.map { UInt8(truncatingIfNeeded: $0) }, bits: bits, order: order)
    }

    /// Packs the low `bits` bits of every code (the one implementation; unchecked
    /// pointer loops over checked sizes, as large weights go through here).
    public static func pack(_ codes: [UInt8], bits: Int, order: BitOrder) -> [UInt8] {
        precondition((1...8).contains(bits), "bit width \(bits) outside 1...8")
        if bits == 8 { return codes }
        let total = byteCount(count: codes.count, bits: bits)
        let mask = UInt32((1 << bits) - 1)
        return [UInt8](unsafeUninitializedCapacity: total) { out, initialized in
            out.initialize(repeating: 0)
            codes.withUnsafeBufferPointer { c in
                var bit = 0
                switch order {
                case .lsbFirst:
                    for code in c {
                        // Bits of v go to stream positions bit…bit+n−1, low bit first.
                        let v = UInt32(code) & mask
                        let byte = bit >> 3, shift = bit & 7
                        let wide = v << shift
                        out[byte] |= UInt8(truncatingIfNeeded: wide)
                        if shift + bits > 8 { out[byte + 1] |= UInt8(truncatingIfNeeded: wide >> 8) }
                        bit += bits
                    }
                case .msbFirst:
                    for code in c {
                        // Stream position p is bit 7 − (p mod 8) of byte p / 8; v's MSB comes first.
                        let v = UInt32(code) & mask
                        let byte = bit >> 3, used = bit & 7
                        let wide = v << (16 - bits - used)  // align v's MSB to bit 15 − used
                        out[byte] |= UInt8(truncatingIfNeeded: wide >> 8)
                        if used + bits > 8 { out[byte + 1] |= UInt8(truncatingIfNeeded: wide) }
                        bit += bits
                    }
                }
            }
            initialized = total
        }
    }

    /// Unpacks `count` unsigned codes; nil when `bytes` is shorter than the codes need.
    public static func unpack(_ bytes: [UInt8], bits: Int, count: Int, order: BitOrder) -> [UInt8]? {
        guard (1...8).contains(bits), count >= 0, bytes.count >= byteCount(count: count, bits: bits) else { return nil }
        var out = [UInt8](repeating: 0, count: count)
        if bits == 8 {
            for i in 0..<count { out[i] = bytes[i] }
            return out
        }
        let mask = UInt32((1 << bits) - 1)
        var bit = 0
        for i in 0..<count {
            let byte = bit >> 3
            let next = byte + 1 < bytes.count ? UInt32(bytes[byte + 1]) : 0
            switch order {
            case .lsbFirst:
                let wide = UInt32(bytes[byte]) | (next << 8)
                out[i] = UInt8(truncatingIfNeeded: (wide >> (bit & 7)) & mask)
            case .msbFirst:
                let wide = (UInt32(bytes[byte]) << 8) | next
                out[i] = UInt8(truncatingIfNeeded: (wide >> (16 - bits - (bit & 7))) & mask)
            }
            bit += bits
        }
        return out
    }

    /// Sign-extends n-bit two's complement codes.
    public static func signExtend(_ codes: [UInt8], bits: Int) -> [Int16] {
        let shift = 16 - bits
        return codes.map { Int16(bitPattern: UInt16($0) << UInt16(shift)) >> Int16(shift) }
    }
}
