/// A FlatBuffers scalar: `bool`, `byte`…`ulong`, `float`, `double`. Stored
/// little-endian, `byteWidth` bytes wide, aligned to its width by the builder.
///
/// The conformances in this module are the complete set; the requirements take
/// raw buffers whose bounds the caller has already checked.
public protocol FlatBufferScalar: Equatable {
    /// Size on the wire, which is also the scalar's alignment.
    static var byteWidth: Int { get }
    /// True when every bit pattern is a valid value, so a host little-endian
    /// array can be copied byte for byte (false for `Bool`).
    static var isBitCopyable: Bool { get }
    /// Reads the value from `byteWidth` little-endian bytes at `offset`
    /// (unaligned-safe). The caller guarantees the bytes are inside `raw`.
    static func readLittleEndian(from raw: UnsafeRawBufferPointer, at offset: Int) -> Self
    /// Writes the value as `byteWidth` little-endian bytes at `offset`
    /// (unaligned-safe). The caller guarantees the bytes are inside `raw`.
    func writeLittleEndian(to raw: UnsafeMutableRawBufferPointer, at offset: Int)
    /// True when the two values have the same wire bytes (so `-0.0` is not
    /// `0.0` and a NaN default matches the same NaN); the builder uses it to
    /// decide that a field equals its default.
    func isIdentical(to other: Self) -> Bool
}

extension FlatBufferScalar {
    public func isIdentical(to other: Self) -> Bool { self == other }
}

extension FlatBufferScalar where Self: FixedWidthInteger {
    public static var byteWidth: Int { MemoryLayout<Self>.size }
    public static var isBitCopyable: Bool { true }
    @inline(__always)
    public static func readLittleEndian(from raw: UnsafeRawBufferPointer, at offset: Int) -> Self {
        Self(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: Self.self))
    }
    @inline(__always)
    public func writeLittleEndian(to raw: UnsafeMutableRawBufferPointer, at offset: Int) {
        raw.storeBytes(of: littleEndian, toByteOffset: offset, as: Self.self)
    }
}

extension Int8: FlatBufferScalar {}
extension UInt8: FlatBufferScalar {}
extension Int16: FlatBufferScalar {}
extension UInt16: FlatBufferScalar {}
extension Int32: FlatBufferScalar {}
extension UInt32: FlatBufferScalar {}
extension Int64: FlatBufferScalar {}
extension UInt64: FlatBufferScalar {}

extension Bool: FlatBufferScalar {
    public static var byteWidth: Int { 1 }
    public static var isBitCopyable: Bool { false }
    /// Any non-zero byte reads as `true`, like the official readers.
    @inline(__always)
    public static func readLittleEndian(from raw: UnsafeRawBufferPointer, at offset: Int) -> Bool {
        raw.load(fromByteOffset: offset, as: UInt8.self) != 0
    }
    @inline(__always)
    public func writeLittleEndian(to raw: UnsafeMutableRawBufferPointer, at offset: Int) {
        raw.storeBytes(of: self ? UInt8(1) : UInt8(0), toByteOffset: offset, as: UInt8.self)
    }
}

extension Float: FlatBufferScalar {
    public static var byteWidth: Int { 4 }
    public static var isBitCopyable: Bool { true }
    @inline(__always)
    public static func readLittleEndian(from raw: UnsafeRawBufferPointer, at offset: Int) -> Float {
        Float(bitPattern: UInt32.readLittleEndian(from: raw, at: offset))
    }
    @inline(__always)
    public func writeLittleEndian(to raw: UnsafeMutableRawBufferPointer, at offset: Int) {
        bitPattern.writeLittleEndian(to: raw, at: offset)
    }
    public func isIdentical(to other: Float) -> Bool { bitPattern == other.bitPattern }
}

extension Double: FlatBufferScalar {
    public static var byteWidth: Int { 8 }
    public static var isBitCopyable: Bool { true }
    @inline(__always)
    public static func readLittleEndian(from raw: UnsafeRawBufferPointer, at offset: Int) -> Double {
        Double(bitPattern: UInt64.readLittleEndian(from: raw, at: offset))
    }
    @inline(__always)
    public func writeLittleEndian(to raw: UnsafeMutableRawBufferPointer, at offset: Int) {
        bitPattern.writeLittleEndian(to: raw, at: offset)
    }
    public func isIdentical(to other: Double) -> Bool { bitPattern == other.bitPattern }
}

/// True on little-endian hosts, where arrays of bit-copyable scalars can be
/// copied to and from the wire format without per-element conversion.
let hostIsLittleEndian: Bool = UInt16(1).littleEndian == 1
