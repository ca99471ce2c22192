/// A dataset's or attribute's values, flattened in row-major order.
/// float16 and float32 read as `floats`, float64 as `doubles`; signed integers,
/// bools and enums (their integer values) as `ints`, unsigned ones as `uints`;
/// strings as `strings` when every element is valid UTF-8, else their bytes
/// (after padding is removed) as `bytes`, as are opaque elements;
/// variable-length sequences as one value per element in `sequences`.
public indirect enum HDF5Value: Sendable, Equatable {
    case floats([Float])
    case doubles([Double])
    case ints([Int64])
    case uints([UInt64])
    case strings([String])
    case bytes([[UInt8]])
    case sequences([HDF5Value])

    public var count: Int {
        switch self {
        case .floats(let v): return v.count
        case .doubles(let v): return v.count
        case .ints(let v): return v.count
        case .uints(let v): return v.count
        case .strings(let v): return v.count
        case .bytes(let v): return v.count
        case .sequences(let v): return v.count
        }
    }

    /// Numbers of any kind as Float (doubles and large integers rounded); nil for strings, bytes and sequences.
    public var floatArray: [Float]? {
        switch self {
        case .floats(let v): return v
        case .doubles(let v): return v.map { Float($0) }
        case .ints(let v): return v.map { Float($0) }
        case .uints(let v): return v.map { Float($0) }
        case .strings, .bytes, .sequences: return nil
        }
    }

    /// The strings; nil for any other kind.
    public var stringArray: [String]? {
        if case .strings(let v) = self { return v }
        return nil
    }
}

/// Turns stored element bytes into an `HDF5Value`.
struct ValueDecoder {
    var heap: GlobalHeap

    /// `count` elements of `type` from `raw` (count × storage size bytes); `at` names the place in errors.
    mutating func decode(_ type: HDF5Datatype, count: Int, _ raw: ArraySlice<UInt8>, at: Int) throws -> HDF5Value {
        let file = heap.file
        let size = type.storageSize(file)
        guard let total = Checked.mul(count, size), total <= raw.count else {
            throw file.error(at, heap.context, "\(count) elements of \(type) need more than the \(raw.count) bytes stored")
        }
        let base = raw.startIndex
        switch type {
        case .integer(let s, let signed, let bigEndian), .enumeration(.integer(let s, let signed, let bigEndian), _):
            var u = [UInt64](repeating: 0, count: count)
            for i in 0..<count { u[i] = ValueDecoder.word(raw, base + i * s, s, bigEndian) }
            guard signed else { return .uints(u) }
            let shift = UInt64(64 - 8 * s)
            return .ints(u.map { Int64(bitPattern: $0 << shift) >> Int64(shift) })
        case .float(let s, let bigEndian):
            if s == 8 {
                if !bigEndian, let fast = ValueDecoder.copied(raw, count: count, as: Double.self) { return .doubles(fast) }
                return .doubles((0..<count).map { Double(bitPattern: ValueDecoder.word(raw, base + $0 * 8, 8, bigEndian)) })
            }
            if s == 4 {
                if !bigEndian, let fast = ValueDecoder.copied(raw, count: count, as: Float.self) { return .floats(fast) }
                return .floats((0..<count).map { Float(bitPattern: UInt32(ValueDecoder.word(raw, base + $0 * 4, 4, bigEndian))) })
            }
            return .floats((0..<count).map { ValueDecoder.half(UInt16(ValueDecoder.word(raw, base + $0 * 2, 2, bigEndian))) })
        case .string(let s, let padding, _):
            return ValueDecoder.strings((0..<count).map { ValueDecoder.unpad(raw[(base + $0 * s)..<(base + ($0 + 1) * s)], padding) })
        case .opaque(let s, _):
            return .bytes((0..<count).map { Array(raw[(base + $0 * s)..<(base + ($0 + 1) * s)]) })
        case .variableLengthString(let padding, _):
            var items: [ArraySlice<UInt8>] = []
            for i in 0..<count {
                let (length, data) = try element(raw, base + i * size, elementSize: 1, at: at)
                items.append(ValueDecoder.unpad(data.prefix(length), padding == .nullTerminated ? .nullTerminated : .nullPadded))
            }
            return ValueDecoder.strings(items)
        case .variableLengthSequence(let inner):
            var items: [HDF5Value] = []
            for i in 0..<count {
                let (length, data) = try element(raw, base + i * size, elementSize: inner.storageSize(file), at: at)
                items.append(try decode(inner, count: length, data, at: at))
            }
            return .sequences(items)
        case .enumeration(let inner, _):
            throw file.error(at, heap.context, "enumeration of \(inner) is not supported")
        case .unsupported(_, _, let reason):
            throw file.error(at, heap.context, reason)
        }
    }

    /// One variable-length element: its length (in base elements) and the heap bytes holding them.
    private mutating func element(_ raw: ArraySlice<UInt8>, _ start: Int, elementSize: Int, at: Int) throws -> (Int, ArraySlice<UInt8>) {
        let file = heap.file
        let length = Int(ValueDecoder.word(raw, start, 4, false))
        let stored = ValueDecoder.word(raw, start + 4, file.offsetSize, false)
        let address: UInt64? = stored == file.undefinedAddress ? nil : stored
        let index = Int(ValueDecoder.word(raw, start + 4 + file.offsetSize, 4, false))
        if length == 0 { return (0, []) }
        guard let address else {
            throw file.error(at, heap.context, "variable-length element of \(length) items has an undefined heap address")
        }
        guard let bytes = Checked.mul(length, max(elementSize, 1)) else {
            throw file.error(at, heap.context, "variable-length element of \(length) items is too large")
        }
        return (length, try heap.object(address: address, index: index, length: bytes, at: at))
    }

    /// `count` little-endian values copied as they are, on a little-endian machine (nil elsewhere).
    static func copied<T: BinaryFloatingPoint>(_ raw: ArraySlice<UInt8>, count: Int, as: T.Type) -> [T]? {
        guard 1.littleEndian == 1, raw.count >= count * MemoryLayout<T>.size else { return nil }
        return [T](unsafeUninitializedCapacity: count) { buffer, initialized in
            raw.withUnsafeBytes { source in
                UnsafeMutableRawBufferPointer(buffer).copyMemory(from: UnsafeRawBufferPointer(rebasing: source[0..<(count * MemoryLayout<T>.size)]))
            }
            initialized = count
        }
    }

    /// An unsigned integer of `n` bytes (1, 2, 4 or 8) at `i`.
    @inline(__always)
    static func word(_ raw: ArraySlice<UInt8>, _ i: Int, _ n: Int, _ bigEndian: Bool) -> UInt64 {
        var v: UInt64 = 0
        if bigEndian {
            for k in 0..<n { v = v << 8 | UInt64(raw[i + k]) }
        } else {
            for k in (0..<n).reversed() { v = v << 8 | UInt64(raw[i + k]) }
        }
        return v
    }

    /// IEEE binary16 to Float (exact).
    static func half(_ h: UInt16) -> Float {
        let sign: UInt32 = UInt32(h >> 15) << 31
        let exponent = Int(h >> 10) & 0x1F
        let mantissa = UInt32(h & 0x3FF)
        if exponent == 0 {
            let magnitude = Float(mantissa) * 0x1p-24
            return sign == 0 ? magnitude : -magnitude
        }
        if exponent == 31 { return Float(bitPattern: sign | 0x7F80_0000 | mantissa << 13) }
        return Float(bitPattern: sign | UInt32(exponent - 15 + 127) << 23 | mantissa << 13)
    }

    /// A fixed-length string's bytes without its padding.
    static func unpad(_ bytes: ArraySlice<UInt8>, _ padding: HDF5StringPadding) -> ArraySlice<UInt8> {
        switch padding {
        case .nullTerminated:
            return bytes.prefix { $0 != 0 }
        case .nullPadded:
            var end = bytes.endIndex
            while end > bytes.startIndex, bytes[end - 1] == 0 { end -= 1 }
            return bytes[bytes.startIndex..<end]
        case .spacePadded:
            var end = bytes.endIndex
            while end > bytes.startIndex, bytes[end - 1] == 0x20 || bytes[end - 1] == 0 { end -= 1 }
            return bytes[bytes.startIndex..<end]
        }
    }

    /// `.strings` when every item is valid UTF-8, else `.bytes`.
    static func strings(_ items: [ArraySlice<UInt8>]) -> HDF5Value {
        var out: [String] = []
        out.reserveCapacity(items.count)
        for item in items {
            let s = String(decoding: item, as: UTF8.self)
            guard s.utf8.elementsEqual(item) else { return .bytes(items.map { Array($0) }) }
            out.append(s)
        }
        return .strings(out)
    }
}
