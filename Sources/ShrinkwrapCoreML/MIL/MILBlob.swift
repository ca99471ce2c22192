import ShrinkwrapIR

/// Core ML's blob storage (`weights/weight.bin` of an ML Program package),
/// as coremltools' `MILBlob/Blob/StorageFormat.hpp` lays it out; every fact
/// below was checked against files coremltools 9.0 writes
/// (MILBlobTests):
///
/// - a 64-byte header: `count: u32` (blobs in the file), `version: u32` (2),
///   then 56 reserved bytes (zero);
/// - per blob, at a 64-byte aligned offset, a 64-byte metadata record:
///   `sentinel: u32` (0xDEADBEEF), `dataType: u32` (`MILBlobDataType`),
///   `sizeInBytes: u64`, `offset: u64` (absolute offset of the data, the
///   record's own offset + 64), `paddingSizeInBits: u64` (unused bits at the
///   end of a sub-byte blob), 32 reserved bytes (zero);
/// - the data right after its record; the next record starts at the next
///   multiple of 64 (the gap is zeros); the file ends with the last data.
///
/// All integers are little-endian. A program refers to a blob by the offset
/// of its metadata record (`BlobFileValue.offset`). Sub-byte types are packed
/// least-significant bit first (`BitPacking.BitOrder.lsbFirst`).
public enum MILBlobDataType: UInt32, Sendable, CaseIterable {
    case float16 = 1, float32 = 2, uint8 = 3, int8 = 4, bfloat16 = 5, int16 = 6, uint16 = 7
    case int4 = 8, uint1 = 9, uint2 = 10, uint4 = 11, uint3 = 12, uint6 = 13
    case int32 = 14, uint32 = 15, float8E4M3FN = 16, float8E5M2 = 17

    /// Bits per element.
    public var bits: Int {
        switch self {
        case .float16, .bfloat16, .int16, .uint16: return 16
        case .float32, .int32, .uint32: return 32
        case .uint8, .int8, .float8E4M3FN, .float8E5M2: return 8
        case .int4, .uint4: return 4
        case .uint1: return 1
        case .uint2: return 2
        case .uint3: return 3
        case .uint6: return 6
        }
    }
}

/// One blob of a storage file: its type and raw bytes.
public struct MILBlob: Sendable, Equatable {
    public var dataType: MILBlobDataType
    public var bytes: [UInt8]
    /// Unused bits at the end of `bytes` (sub-byte types only).
    public var paddingBits: Int

    public init(dataType: MILBlobDataType, bytes: [UInt8], paddingBits: Int = 0) {
        self.dataType = dataType; self.bytes = bytes; self.paddingBits = paddingBits
    }

    /// Elements the blob holds.
    public var elementCount: Int { (bytes.count * 8 - paddingBits) / dataType.bits }
}

/// Reads a blob storage file. Every field is checked before it is used: a
/// damaged file gives an error naming the file and the byte offset, never a
/// crash or an allocation sized by an unchecked field.
public struct MILBlobReader: Sendable {
    public static let headerSize = 64, recordSize = 64, alignment = 64
    public static let sentinel: UInt32 = 0xDEAD_BEEF
    public static let version: UInt32 = 2

    public let file: String
    public let bytes: [UInt8]
    /// Blobs the header says the file holds.
    public let count: Int

    public init(bytes: [UInt8], file: String) throws {
        self.file = file; self.bytes = bytes
        guard bytes.count >= Self.headerSize else {
            throw ImportError.malformed(SourceLocation(file: file, place: "offset 0"),
                                        reason: "\(bytes.count) bytes, shorter than the 64-byte blob storage header")
        }
        let version = Self.u32(bytes, 4)
        guard version == Self.version else {
            throw ImportError.malformed(SourceLocation(file: file, place: "offset 4"),
                                        reason: "blob storage version \(version), expected 2")
        }
        let count = Int(Self.u32(bytes, 0))
        // Every blob takes at least its 64-byte record.
        guard count <= (bytes.count - Self.headerSize) / Self.recordSize else {
            throw ImportError.malformed(SourceLocation(file: file, place: "offset 0"),
                                        reason: "the header counts \(count) blobs, more than \(bytes.count) bytes can hold")
        }
        self.count = count
    }

    /// The blob whose metadata record starts at `offset`.
    public func blob(at offset: UInt64) throws -> MILBlob {
        func bad(_ at: Int, _ reason: String) -> ImportError {
            ImportError.malformed(SourceLocation(file: file, place: "offset \(at)"), reason: reason)
        }
        guard offset >= UInt64(Self.headerSize), offset % UInt64(Self.alignment) == 0,
              offset <= UInt64(bytes.count), UInt64(bytes.count) - offset >= UInt64(Self.recordSize) else {
            throw bad(Int(clamping: offset), "no blob record at offset \(offset) (records are 64-byte aligned, after the header, inside the \(bytes.count)-byte file)")
        }
        let o = Int(offset)
        let sentinel = Self.u32(bytes, o)
        guard sentinel == Self.sentinel else {
            throw bad(o, "blob record sentinel 0x\(String(sentinel, radix: 16, uppercase: true)), expected 0xDEADBEEF")
        }
        let code = Self.u32(bytes, o + 4)
        guard let type = MILBlobDataType(rawValue: code) else { throw bad(o + 4, "unknown blob data type \(code)") }
        let size = Self.u64(bytes, o + 8), dataOffset = Self.u64(bytes, o + 16)
        // The padding field was reserved before sub-byte types existed: writers before coremltools 8
        // left it uninitialized (basic-pitch's file has garbage there), so whole-byte types ignore it.
        let padding = type.bits < 8 ? Self.u64(bytes, o + 24) : 0
        guard dataOffset <= UInt64(bytes.count), size <= UInt64(bytes.count) - dataOffset else {
            throw bad(o + 8, "blob data of \(size) bytes at offset \(dataOffset) runs past the end of the \(bytes.count)-byte file")
        }
        guard dataOffset >= offset + UInt64(Self.recordSize) else {
            throw bad(o + 16, "blob data offset \(dataOffset) overlaps its own record at \(offset)")
        }
        let bits = UInt64(type.bits)
        guard padding < 8, size * 8 >= padding, (size * 8 - padding) % bits == 0 else {
            throw bad(o + 24, "\(size) bytes with \(padding) padding bits do not hold whole \(type) elements")
        }
        let start = Int(dataOffset)
        return MILBlob(dataType: type, bytes: Array(bytes[start..<start + Int(size)]), paddingBits: Int(padding))
    }

    static func u32(_ b: [UInt8], _ o: Int) -> UInt32 {
        (0..<4).reduce(UInt32(0)) { $0 | UInt32(b[o + $1]) << (8 * UInt32($1)) }
    }

    static func u64(_ b: [UInt8], _ o: Int) -> UInt64 {
        (0..<8).reduce(UInt64(0)) { $0 | UInt64(b[o + $1]) << (8 * UInt64($1)) }
    }
}

/// Writes a blob storage file, blobs in the order they are appended (so the
/// same program gives the same bytes).
public struct MILBlobWriter: Sendable {
    public private(set) var bytes: [UInt8]
    public private(set) var count = 0

    public init() { bytes = [UInt8](repeating: 0, count: MILBlobReader.headerSize); Self.put32(&bytes, 4, MILBlobReader.version) }

    /// Appends a blob; returns the offset of its metadata record (what the
    /// program's `BlobFileValue.offset` holds).
    public mutating func append(_ blob: MILBlob) -> UInt64 {
        let a = MILBlobReader.alignment
        let recordOffset = (bytes.count + a - 1) / a * a
        bytes.append(contentsOf: [UInt8](repeating: 0, count: recordOffset - bytes.count + MILBlobReader.recordSize))
        let dataOffset = recordOffset + MILBlobReader.recordSize
        Self.put32(&bytes, recordOffset, MILBlobReader.sentinel)
        Self.put32(&bytes, recordOffset + 4, blob.dataType.rawValue)
        Self.put64(&bytes, recordOffset + 8, UInt64(blob.bytes.count))
        Self.put64(&bytes, recordOffset + 16, UInt64(dataOffset))
        Self.put64(&bytes, recordOffset + 24, UInt64(blob.paddingBits))
        bytes.append(contentsOf: blob.bytes)
        count += 1
        Self.put32(&bytes, 0, UInt32(count))
        return UInt64(recordOffset)
    }

    static func put32(_ b: inout [UInt8], _ o: Int, _ v: UInt32) {
        for k in 0..<4 { b[o + k] = UInt8(truncatingIfNeeded: v >> (8 * UInt32(k))) }
    }

    static func put64(_ b: inout [UInt8], _ o: Int, _ v: UInt64) {
        for k in 0..<8 { b[o + k] = UInt8(truncatingIfNeeded: v >> (8 * UInt64(k))) }
    }
}

extension MILBlob {
    /// Packs codes of a sub-byte or byte type (1/2/3/4/6 bits, 8 bits), as
    /// Core ML stores them: least-significant bit first, unused bits of the
    /// last byte zero and counted in `paddingBits`.
    public static func packed<C: Collection>(_ codes: C, as type: MILBlobDataType) -> MILBlob where C.Element: BinaryInteger {
        let bits = type.bits
        let bytes = BitPacking.pack(codes, bits: bits, order: .lsbFirst)
        return MILBlob(dataType: type, bytes: bytes, paddingBits: bytes.count * 8 - codes.count * bits)
    }

    /// The unsigned codes of a packed integer blob of 8 bits or fewer (two's
    /// complement bit patterns for int4 / int8).
    public func unpackedCodes() -> [UInt8]? {
        guard dataType.bits <= 8, [.uint1, .uint2, .uint3, .uint4, .uint6, .uint8, .int4, .int8].contains(dataType) else { return nil }
        return BitPacking.unpack(bytes, bits: dataType.bits, count: elementCount, order: .lsbFirst)
    }
}
