import Foundation
import ONNXSchema
import ShrinkwrapIR

/// Decodes ONNX TensorProto values in every storage form: little-endian
/// raw_data, the typed repeated fields, and external data in a file beside
/// the model. Every size is checked against the declared shape before any
/// allocation.
struct ONNXTensorDecoder {
    /// The model file (for messages) and its folder (for external data).
    let file: String
    let modelDirectory: URL?
    /// Largest tensor accepted, in elements.
    var elementLimit = 1 << 32

    /// `raw`: the tensor's raw_data when it was lifted out of the protobuf (`ONNXRawDataScan`).
    func decode(_ t: Onnx_TensorProto, place: String, raw: UnsafeRawBufferPointer? = nil) throws -> Tensor {
        let loc = SourceLocation(file: file, place: place)
        if t.dataType == Int32(Onnx_TensorProto.DataType.uint4.rawValue) || t.dataType == Int32(Onnx_TensorProto.DataType.int4.rawValue) {
            return try decodeFourBit(t, signed: t.dataType == Int32(Onnx_TensorProto.DataType.int4.rawValue), loc: loc)
        }
        guard let dtype = DType(onnxDataType: Int(t.dataType)) else {
            let name = Onnx_TensorProto.DataType(rawValue: Int(t.dataType)).map { "\($0)" } ?? "code \(t.dataType)"
            throw ImportError.unsupported(loc, what: "tensor element type \(name)")
        }
        let (shape, count) = try checkedShape(t, loc: loc)
        if t.hasSegment { throw ImportError.unsupported(loc, what: "segmented tensor") }

        if t.dataLocation == .external {
            let bytes = try readExternal(t, expectedBytes: count * dtype.byteWidth, loc: loc)
            return try bytes.withUnsafeBytes { try fromLittleEndian($0, dtype: dtype, shape: shape, count: count, loc: loc) }
        }
        if let raw {
            return try fromLittleEndian(raw, dtype: dtype, shape: shape, count: count, loc: loc)
        }
        if t.hasRawData {
            return try t.rawData.withUnsafeBytes { try fromLittleEndian($0, dtype: dtype, shape: shape, count: count, loc: loc) }
        }
        func need(_ have: Int, _ field: String) throws {
            guard have == count else {
                throw ImportError.badTensor(loc, reason: "\(field) has \(have) values, shape \(shape) needs \(count)")
            }
        }
        switch dtype {
        case .float32:
            try need(t.floatData.count, "float_data")
            return Tensor(t.floatData, shape: shape)
        case .float64:
            try need(t.doubleData.count, "double_data")
            return Tensor(t.doubleData.map { Float($0) }, shape: shape, dtype: .float64)
        case .float16:
            try need(t.int32Data.count, "int32_data")
            return Tensor(t.int32Data.map { Half.float(fromBits: UInt16(truncatingIfNeeded: $0)) }, shape: shape, dtype: .float16)
        case .bfloat16:
            try need(t.int32Data.count, "int32_data")
            return Tensor(t.int32Data.map { Half.float(fromBFloatBits: UInt16(truncatingIfNeeded: $0)) }, shape: shape, dtype: .bfloat16)
        case .bool:
            try need(t.int32Data.count, "int32_data")
            return Tensor(bools: t.int32Data.map { $0 != 0 }, shape: shape)
        case .int8, .int16, .int32, .uint8, .uint16:
            try need(t.int32Data.count, "int32_data")
            return Tensor(ints: t.int32Data.map { dtype.wrap(Int64($0)) }, shape: shape, dtype: dtype)
        case .int64:
            try need(t.int64Data.count, "int64_data")
            return Tensor(ints: t.int64Data, shape: shape, dtype: dtype)
        case .uint32, .uint64:
            try need(t.uint64Data.count, "uint64_data")
            return Tensor(ints: t.uint64Data.map { Int64(truncatingIfNeeded: $0) }, shape: shape, dtype: dtype)
        }
    }

    /// The tensor's dims, each in range, and their element count within the limit.
    func checkedShape(_ t: Onnx_TensorProto, loc: SourceLocation) throws -> (shape: [Int], count: Int) {
        var shape: [Int] = []
        for d in t.dims {
            guard d >= 0, d <= Int64(Int32.max) else { throw ImportError.badTensor(loc, reason: "dimension \(d) is out of range") }
            shape.append(Int(d))
        }
        guard let count = checkedElementCount(shape, limit: elementLimit) else {
            throw ImportError.badTensor(loc, reason: "shape \(shape) declares more than \(elementLimit) elements")
        }
        return (shape, count)
    }

    /// INT4 / UINT4 (two per byte, low nibble first; in raw_data, external
    /// data or int32_data) → an int8 / uint8 tensor of the same values.
    func decodeFourBit(_ t: Onnx_TensorProto, signed: Bool, loc: SourceLocation) throws -> Tensor {
        let (shape, count) = try checkedShape(t, loc: loc)
        let byteCount = (count + 1) / 2
        let bytes: [UInt8]
        if t.dataLocation == .external {
            bytes = [UInt8](try readExternal(t, expectedBytes: byteCount, loc: loc))
        } else if t.hasRawData {
            guard t.rawData.count == byteCount else {
                throw ImportError.badTensor(loc, reason: "raw data has \(t.rawData.count) bytes, \(count) 4-bit values need \(byteCount)")
            }
            bytes = [UInt8](t.rawData)
        } else {
            guard t.int32Data.count == byteCount else {
                throw ImportError.badTensor(loc, reason: "int32_data has \(t.int32Data.count) values, \(count) 4-bit values need \(byteCount)")
            }
            bytes = t.int32Data.map { UInt8(truncatingIfNeeded: $0) }
        }
        guard let nibbles = BitPacking.unpack(bytes, bits: 4, count: count, order: .onnx4Bit) else {
            throw ImportError.badTensor(loc, reason: "cannot unpack \(count) 4-bit values")
        }
        if signed {
            return Tensor(ints: nibbles.map { Int64(($0 & 0x8) != 0 ? Int($0) - 16 : Int($0)) }, shape: shape, dtype: .int8)
        }
        return Tensor(ints: nibbles.map { Int64($0) }, shape: shape, dtype: .uint8)
    }

    /// Little-endian bytes → tensor; the byte count must match exactly.
    func fromLittleEndian(_ raw: UnsafeRawBufferPointer, dtype: DType, shape: [Int], count: Int, loc: SourceLocation) throws -> Tensor {
        let width = dtype.byteWidth
        guard raw.count == count * width else {
            throw ImportError.badTensor(loc, reason: "raw data has \(raw.count) bytes, shape \(shape) of \(dtype) needs \(count * width)")
        }
        if dtype == .float32, 1.littleEndian == 1 {
            // The host's own layout: one copy of the bytes.
            let values = [Float](unsafeUninitializedCapacity: count) { out, initialized in
                if let dst = out.baseAddress, let src = raw.baseAddress { UnsafeMutableRawPointer(dst).copyMemory(from: src, byteCount: count * 4) }
                initialized = count
            }
            return Tensor(values, shape: shape)
        }
        func load<T: FixedWidthInteger>(_: T.Type, _ i: Int) -> T {
            T(littleEndian: raw.loadUnaligned(fromByteOffset: i * MemoryLayout<T>.size, as: T.self))
        }
        switch dtype {
        case .float32:
            return Tensor((0..<count).map { Float(bitPattern: load(UInt32.self, $0)) }, shape: shape)
        case .float64:
            return Tensor((0..<count).map { Float(Double(bitPattern: load(UInt64.self, $0))) }, shape: shape, dtype: .float64)
        case .float16:
            return Tensor((0..<count).map { Half.float(fromBits: load(UInt16.self, $0)) }, shape: shape, dtype: .float16)
        case .bfloat16:
            return Tensor((0..<count).map { Half.float(fromBFloatBits: load(UInt16.self, $0)) }, shape: shape, dtype: .bfloat16)
        case .bool:
            return Tensor(bools: (0..<count).map { raw[$0] != 0 }, shape: shape)
        case .int8:
            return Tensor(ints: (0..<count).map { Int64(Int8(bitPattern: raw[$0])) }, shape: shape, dtype: dtype)
        case .uint8:
            return Tensor(ints: (0..<count).map { Int64(raw[$0]) }, shape: shape, dtype: dtype)
        case .int16:
            return Tensor(ints: (0..<count).map { Int64(load(Int16.self, $0)) }, shape: shape, dtype: dtype)
        case .uint16:
            return Tensor(ints: (0..<count).map { Int64(load(UInt16.self, $0)) }, shape: shape, dtype: dtype)
        case .int32:
            return Tensor(ints: (0..<count).map { Int64(load(Int32.self, $0)) }, shape: shape, dtype: dtype)
        case .uint32:
            return Tensor(ints: (0..<count).map { Int64(load(UInt32.self, $0)) }, shape: shape, dtype: dtype)
        case .int64:
            return Tensor(ints: (0..<count).map { load(Int64.self, $0) }, shape: shape, dtype: dtype)
        case .uint64:
            return Tensor(ints: (0..<count).map { Int64(bitPattern: load(UInt64.self, $0)) }, shape: shape, dtype: dtype)
        }
    }

    /// Reads an external-data tensor's bytes. The location must be a relative
    /// path that stays inside the model's folder (after resolving symlinks).
    func readExternal(_ t: Onnx_TensorProto, expectedBytes: Int, loc: SourceLocation) throws -> Data {
        var location: String?
        var offset = 0
        var length: Int?
        for e in t.externalData {
            switch e.key {
            case "location": location = e.value
            case "offset":
                guard let v = Int(e.value), v >= 0 else { throw ImportError.badExternalData(loc, reason: "offset '\(e.value)' is not a non-negative integer") }
                offset = v
            case "length":
                guard let v = Int(e.value), v >= 0 else { throw ImportError.badExternalData(loc, reason: "length '\(e.value)' is not a non-negative integer") }
                length = v
            default: break
            }
        }
        guard let location, !location.isEmpty else { throw ImportError.badExternalData(loc, reason: "no location given") }
        guard let dir = modelDirectory else { throw ImportError.badExternalData(loc, reason: "model has no folder to resolve '\(location)' against") }
        if location.hasPrefix("/") || location.contains("\\") || location.split(separator: "/").contains("..") {
            throw ImportError.badExternalData(loc, reason: "path '\(location)' escapes the model's folder")
        }
        let base = dir.standardizedFileURL.resolvingSymlinksInPath()
        let url = base.appendingPathComponent(location).standardizedFileURL.resolvingSymlinksInPath()
        let basePath = base.path.hasSuffix("/") ? base.path : base.path + "/"
        guard url.path.hasPrefix(basePath) else {
            throw ImportError.badExternalData(loc, reason: "path '\(location)' escapes the model's folder")
        }
        if let length, length != expectedBytes {
            throw ImportError.badExternalData(loc, reason: "length \(length) does not match the \(expectedBytes) bytes the shape needs")
        }
        guard let handle = try? FileHandle(forReadingFrom: url) else {
            throw ImportError.badExternalData(loc, reason: "cannot open '\(location)'")
        }
        defer { try? handle.close() }
        let size = (try? handle.seekToEnd()).map { Int($0) } ?? 0
        guard offset <= size, expectedBytes <= size - offset else {
            throw ImportError.badExternalData(loc, reason: "'\(location)' has \(size) bytes; offset \(offset) + \(expectedBytes) bytes runs past its end")
        }
        do {
            try handle.seek(toOffset: UInt64(offset))
            let data = try handle.read(upToCount: expectedBytes) ?? Data()
            guard data.count == expectedBytes else {
                throw ImportError.badExternalData(loc, reason: "short read from '\(location)'")
            }
            return data
        } catch let e as ImportError {
            throw e
        } catch {
            throw ImportError.badExternalData(loc, reason: "cannot read '\(location)': \(error)")
        }
    }
}
