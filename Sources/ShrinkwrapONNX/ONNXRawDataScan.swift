import Foundation
import ShrinkwrapIR

/// Lifts the large `raw_data` fields of a model's main-graph initializers out
/// of the protobuf before SwiftProtobuf parses it, so those bytes are decoded
/// once, straight from the file (SwiftProtobuf would copy each into a `Data`,
/// and the decoder would copy that again).
///
/// The scan reads only the wire format of `ModelProto.graph` (field 7),
/// `GraphProto.initializer` (5) and `TensorProto` (data_type 2, raw_data 9,
/// data_location 14). It returns the model without the lifted fields (the
/// enclosing lengths rewritten) and where each lifted field's bytes are.
/// Anything it does not expect — a truncated field, a length past the end, a
/// second graph, a repeated or odd raw_data — makes it lift nothing, and the
/// whole file goes to SwiftProtobuf as before, which gives the usual error.
enum ONNXRawDataScan {
    /// Fields of at least this many bytes are lifted.
    static let defaultMinimumBytes = 1 << 16

    struct Lifted {
        /// The model bytes without the lifted fields.
        var model: Data
        /// Main-graph initializer index → the range of its raw_data bytes in the input.
        var payloads: [Int: Range<Int>]
    }

    /// nil when nothing is lifted (or the bytes are not what the scan expects).
    static func lift(_ bytes: UnsafeRawBufferPointer, minimumBytes: Int = defaultMinimumBytes) -> Lifted? {
        var top = WireReader(bytes, 0..<bytes.count)
        var graph: (field: Range<Int>, body: Range<Int>)?
        while !top.atEnd {
            guard let f = top.next() else { return nil }
            if f.number == 7 {
                guard f.wireType == 2, graph == nil, let body = f.body else { return nil }
                graph = (f.whole, body)
            }
        }
        guard let graph else { return nil }
        var fields: [(whole: Range<Int>, tensor: Range<Int>?, lifted: Range<Int>?)] = []
        var payloads: [Int: Range<Int>] = [:]
        var reader = WireReader(bytes, graph.body)
        var index = 0
        while !reader.atEnd {
            guard let f = reader.next() else { return nil }
            if f.number == 5, f.wireType != 2 { return nil }
            guard f.number == 5, let body = f.body else {
                fields.append((f.whole, nil, nil))
                continue
            }
            guard let raw = liftable(bytes, body, minimumBytes: minimumBytes) else {
                fields.append((f.whole, nil, nil))
                index += 1
                continue
            }
            payloads[index] = raw.payload
            fields.append((f.whole, body, raw.field))
            index += 1
        }
        if payloads.isEmpty { return nil }
        var graphBody = Data()
        for f in fields {
            guard let tensor = f.tensor, let cut = f.lifted else {
                append(bytes, f.whole, to: &graphBody)
                continue
            }
            let size = (cut.lowerBound - tensor.lowerBound) + (tensor.upperBound - cut.upperBound)
            appendTag(5, length: size, to: &graphBody)
            append(bytes, tensor.lowerBound..<cut.lowerBound, to: &graphBody)
            append(bytes, cut.upperBound..<tensor.upperBound, to: &graphBody)
        }
        var model = Data()
        append(bytes, 0..<graph.field.lowerBound, to: &model)
        appendTag(7, length: graphBody.count, to: &model)
        model.append(graphBody)
        append(bytes, graph.field.upperBound..<bytes.count, to: &model)
        return Lifted(model: model, payloads: payloads)
    }

    /// A TensorProto whose one raw_data field is large and read by the plain
    /// decoder (a known element type other than the 4-bit ones, not external):
    /// the whole field and its bytes.
    static func liftable(_ bytes: UnsafeRawBufferPointer, _ tensor: Range<Int>, minimumBytes: Int)
        -> (field: Range<Int>, payload: Range<Int>)? {
        var reader = WireReader(bytes, tensor)
        var raw: (field: Range<Int>, payload: Range<Int>)?
        var rawFields = 0
        var dataType: UInt64 = 0
        var external = false
        while !reader.atEnd {
            guard let f = reader.next() else { return nil }
            switch f.number {
            case 2:
                guard f.wireType == 0, let v = f.varint else { return nil }
                dataType = v
            case 9:
                rawFields += 1
                guard f.wireType == 2, let body = f.body else { return nil }
                raw = (f.whole, body)
            case 14:
                guard f.wireType == 0, let v = f.varint else { return nil }
                external = v == 1
            default: break
            }
        }
        guard let raw, rawFields == 1, !external, raw.payload.count >= minimumBytes,
              dataType <= UInt64(Int32.max), DType(onnxDataType: Int(dataType)) != nil else { return nil }
        return raw
    }

    /// Appends `bytes[r]` (a range the scan checked) to `out`.
    static func append(_ bytes: UnsafeRawBufferPointer, _ r: Range<Int>, to out: inout Data) {
        guard !r.isEmpty, r.lowerBound >= 0, r.upperBound <= bytes.count, let base = bytes.baseAddress else { return }
        out.append((base + r.lowerBound).assumingMemoryBound(to: UInt8.self), count: r.count)
    }

    /// A length-delimited field's tag and length.
    static func appendTag(_ number: Int, length: Int, to out: inout Data) {
        appendVarint(UInt64(number << 3 | 2), to: &out)
        appendVarint(UInt64(length), to: &out)
    }

    static func appendVarint(_ value: UInt64, to out: inout Data) {
        var v = value
        while v >= 0x80 {
            out.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        out.append(UInt8(v))
    }
}

/// Protobuf wire-format fields of a byte range, every read bounds-checked.
struct WireReader {
    struct Field {
        var number: UInt64
        var wireType: UInt64
        /// Tag through the end of the value.
        var whole: Range<Int>
        /// A length-delimited field's bytes.
        var body: Range<Int>?
        /// A varint field's value.
        var varint: UInt64?
    }

    let bytes: UnsafeRawBufferPointer
    private(set) var position: Int
    let end: Int

    init(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) {
        self.bytes = bytes
        position = max(0, range.lowerBound)
        end = min(bytes.count, range.upperBound)
    }

    var atEnd: Bool { position >= end }

    /// The next field, or nil when it is cut short, runs past the end, or is a group.
    mutating func next() -> Field? {
        let start = position
        guard let tag = varint() else { return nil }
        let number = tag >> 3, wireType = tag & 7
        guard number > 0 else { return nil }
        var field = Field(number: number, wireType: wireType, whole: start..<start)
        switch wireType {
        case 0:
            guard let v = varint() else { return nil }
            field.varint = v
        case 1, 5:
            let width = wireType == 1 ? 8 : 4
            guard end - position >= width else { return nil }
            position += width
        case 2:
            guard let n = varint(), n <= UInt64(end - position) else { return nil }
            field.body = position..<(position + Int(n))
            position += Int(n)
        default:
            return nil  // groups (3, 4) and invalid types: left to SwiftProtobuf
        }
        field.whole = start..<position
        return field
    }

    /// A base-128 varint of at most 10 bytes.
    mutating func varint() -> UInt64? {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while position < end, shift < 64 {
            let b = bytes[position]
            position += 1
            value |= UInt64(b & 0x7F) << shift
            if b < 0x80 { return value }
            shift += 7
        }
        return nil
    }
}
