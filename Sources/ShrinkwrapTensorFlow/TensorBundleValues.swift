import ShrinkwrapIR
import TensorFlowSchema

extension TensorBundle {
    /// Tensor `name`: float32 / float16 / bfloat16 / float64, int8 … int64,
    /// uint8 … uint64 or bool. String tensors are read by `strings(_:)`;
    /// other types (complex, quantized, resource, variant) are refused.
    func tensor(_ name: String) throws -> Tensor {
        let entry = try entry(name)
        guard let dtype = DType(tensorFlow: entry.dtype) else {
            let what = entry.dtype == .dtString ? "a string tensor where numbers were expected" : "tensors of type \(entry.dtype)"
            throw ImportError.unsupported(location(name), what: what)
        }
        let shape = try shape(of: entry, name: name)
        guard let count = checkedElementCount(shape) else {
            throw ImportError.badTensor(location(name), reason: "shape \(shape) has too many elements")
        }
        guard entry.size == Int64(count * dtype.byteWidth) else {
            throw ImportError.badTensor(location(name), reason: "\(entry.size) bytes of data, shape \(shape) of \(dtype) needs \(count * dtype.byteWidth)")
        }
        let bytes = try bytes(of: entry, name: name)
        try checkCRC(CRC32C.checksum(bytes[...]), of: entry, name: name)
        return Self.decode(littleEndian: bytes, dtype: dtype, shape: shape)
    }

    /// The elements of string tensor `name`, in row-major order. On disk: one
    /// varint64 length per element, the masked CRC-32C of the lengths (each as a
    /// little-endian uint32, or uint64 when larger), then the strings' bytes. The
    /// entry's CRC covers those lengths, the 4 stored bytes and the strings.
    func strings(_ name: String) throws -> [[UInt8]] {
        let entry = try entry(name)
        guard entry.dtype == .dtString else {
            throw ImportError.badTensor(location(name), reason: "type \(entry.dtype), not a string tensor")
        }
        let shape = try shape(of: entry, name: name)
        let bytes = try bytes(of: entry, name: name)
        guard let count = checkedElementCount(shape), count <= bytes.count else {
            throw ImportError.badTensor(location(name), reason: "shape \(shape) needs more lengths than its \(bytes.count) bytes hold")
        }
        if count == 0 && bytes.isEmpty { return [] }
        let bad = { (reason: String) in ImportError.badTensor(dataLocation(entry, name: name), reason: reason) }
        var cursor = ByteCursor(bytes, 0..<bytes.count)
        var lengths: [Int] = []
        lengths.reserveCapacity(count)
        var crc: UInt32 = 0
        for i in 0..<count {
            guard let length = cursor.varint64(), length <= UInt64(bytes.count) else {
                throw bad("length of element \(i): truncated, overlong or beyond the data")
            }
            crc = length <= UInt64(UInt32.max) ? Self.extend(crc, with: UInt32(length)) : Self.extend(crc, with: length)
            lengths.append(Int(length))
        }
        guard let stored = cursor.take(4) else { throw bad("no checksum after the \(count) lengths") }
        guard CRC32C.unmask(BundleTable.littleEndian32(bytes, at: stored.lowerBound)) == crc else {
            throw bad("checksum of the string lengths does not match")
        }
        crc = CRC32C.checksum(bytes[stored], continuing: crc)
        var strings: [[UInt8]] = []
        strings.reserveCapacity(count)
        for (i, length) in lengths.enumerated() {
            guard let range = cursor.take(length) else { throw bad("element \(i) of \(length) bytes runs past the data") }
            strings.append(Array(bytes[range]))
            crc = CRC32C.checksum(bytes[range], continuing: crc)
        }
        guard cursor.atEnd else { throw bad("\(cursor.remaining) bytes after the last string") }
        try checkCRC(crc, of: entry, name: name)
        return strings
    }

    /// A TF2 checkpoint's object graph (which object owns which tensor), or nil
    /// when the bundle has none (TF1 checkpoints).
    func objectGraph() throws -> Tensorflow_TrackableObjectGraph? {
        guard contains(Self.objectGraphKey) else { return nil }
        let value = try strings(Self.objectGraphKey)
        guard value.count == 1 else {
            throw ImportError.badTensor(location(Self.objectGraphKey), reason: "\(value.count) strings, expected one")
        }
        return try Self.message(value[0], file: dataFile(shard: 0), place: Self.place(Self.objectGraphKey))
    }

    // MARK: - Decoding

    private static func extend<T: FixedWidthInteger>(_ crc: UInt32, with value: T) -> UInt32 {
        withUnsafeBytes(of: value.littleEndian) { CRC32C.checksum($0, continuing: crc) }
    }

    /// Little-endian elements (their count already checked against the shape) as a tensor.
    static func decode(littleEndian bytes: [UInt8], dtype: DType, shape: [Int]) -> Tensor {
        func words<T: FixedWidthInteger>(_: T.Type) -> [T] {
            bytes.withUnsafeBytes { raw in
                let width = MemoryLayout<T>.size
                return (0..<(raw.count / width)).map { T(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * width, as: T.self)) }
            }
        }
        let storage: TensorStorage
        switch dtype {
        case .float32: storage = .float(words(UInt32.self).map { Float(bitPattern: $0) })
        case .float16: storage = .float(words(UInt16.self).map { Half.float(fromBits: $0) })
        case .bfloat16: storage = .float(words(UInt16.self).map { Half.float(fromBFloatBits: $0) })
        case .float64: storage = .float(words(UInt64.self).map { Float(Double(bitPattern: $0)) })
        case .bool: storage = .bool(bytes.map { $0 != 0 })
        case .int8: storage = .int(words(Int8.self).map { Int64($0) })
        case .int16: storage = .int(words(Int16.self).map { Int64($0) })
        case .int32: storage = .int(words(Int32.self).map { Int64($0) })
        case .int64: storage = .int(words(Int64.self))
        case .uint8: storage = .int(bytes.map { Int64($0) })
        case .uint16: storage = .int(words(UInt16.self).map { Int64($0) })
        case .uint32: storage = .int(words(UInt32.self).map { Int64($0) })
        case .uint64: storage = .int(words(UInt64.self).map { Int64(bitPattern: $0) })
        }
        return Tensor(dtype: dtype, shape: shape, storage: storage)
    }
}

extension DType {
    /// The IR type of a TensorFlow DataType; nil for the types the IR has no
    /// counterpart of (strings, complex, quantized, resources, variants, float8)
    /// and for the _REF types of TF1 variables.
    init?(tensorFlow type: Tensorflow_DataType) {
        switch type {
        case .dtFloat: self = .float32
        case .dtHalf: self = .float16
        case .dtBfloat16: self = .bfloat16
        case .dtDouble: self = .float64
        case .dtInt8: self = .int8
        case .dtInt16: self = .int16
        case .dtInt32: self = .int32
        case .dtInt64: self = .int64
        case .dtUint8: self = .uint8
        case .dtUint16: self = .uint16
        case .dtUint32: self = .uint32
        case .dtUint64: self = .uint64
        case .dtBool: self = .bool
        default: return nil
        }
    }
}
