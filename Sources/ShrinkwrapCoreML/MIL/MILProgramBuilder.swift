import CoreMLSchema
import Foundation
import ShrinkwrapIR

typealias MILValueType = CoreML_Specification_MILSpec_ValueType

/// A value's MIL type: element type and static shape (rank 0 = scalar).
struct MILTensorType: Equatable {
    var dataType: MILDataType
    var shape: [Int]

    var proto: MILValueType {
        var t = CoreML_Specification_MILSpec_TensorType()
        t.dataType = dataType
        t.rank = Int64(shape.count)
        t.dimensions = shape.map { d in
            var dim = CoreML_Specification_MILSpec_Dimension()
            var c = CoreML_Specification_MILSpec_Dimension.ConstantDimension()
            c.size = UInt64(max(d, 0))
            dim.constant = c
            return dim
        }
        var v = MILValueType()
        v.tensorType = t
        return v
    }
}

/// A parameter of an op: a value already in the program, or a list of them
/// (`concat`'s `values`).
enum MILArgument {
    case value(String)
    case values([String])
}

/// Builds one MIL block: ops in order, names unique, parameters as `const`
/// ops (as coremltools writes them), large constants in the blob file.
///
/// Names follow coremltools' rules for what the runtime accepts: letters,
/// digits and underscores, not starting with a digit.
struct MILProgramBuilder {
    /// Constants with at least this many elements go to weight.bin (as coremltools does).
    static let blobThreshold = 10

    /// The ops of the block being built.
    private(set) var operations: [MILOperation] = []
    /// The ops of the blocks around it, outermost first (while a loop's blocks are built).
    private var enclosing: [[MILOperation]] = []
    private(set) var blobs = MILBlobWriter()
    private var names = NameAllocator()
    /// Types of the values defined so far.
    private(set) var types: [String: MILTensorType] = [:]

    /// A fresh valid name derived from `base`.
    mutating func fresh(_ base: String) -> String { names.fresh(Self.sanitized(base)) }

    /// Reserves `name` exactly (inputs); false when it is taken.
    mutating func reserve(_ name: String) -> Bool {
        let n = names.fresh(name)
        return n == name
    }

    mutating func declare(_ name: String, _ type: MILTensorType) { types[name] = type }

    static func sanitized(_ s: String) -> String {
        var out = String(s.unicodeScalars.map { c -> Character in
            (c.properties.isAlphabetic && c.isASCII) || ("0"..."9").contains(c) || c == "_" ? Character(c) : "_"
        })
        if out.isEmpty { out = "v" }
        if let f = out.unicodeScalars.first, ("0"..."9").contains(f) { out = "_" + out }
        return out
    }

    static func stringValue(_ s: String) -> MILValue {
        var v = MILValue()
        var t = CoreML_Specification_MILSpec_TensorType()
        t.dataType = .string
        v.type.tensorType = t
        var tv = CoreML_Specification_MILSpec_TensorValue()
        var r = CoreML_Specification_MILSpec_TensorValue.RepeatedStrings()
        r.values = [s]
        tv.strings = r
        v.immediateValue.tensor = tv
        return v
    }

    // MARK: ops

    /// Appends an op; returns its output names.
    @discardableResult
    mutating func op(_ type: String, _ inputs: [(String, MILArgument)], outputs: [(String, MILTensorType)],
                     attributes: [String: MILValue] = [:], blocks: [MILBlock] = [], name: String? = nil) -> [String] {
        var o = MILOperation()
        o.type = type
        for (k, arg) in inputs {
            var a = CoreML_Specification_MILSpec_Argument()
            let list: [String]
            switch arg {
            case .value(let v): list = [v]
            case .values(let vs): list = vs
            }
            a.arguments = list.map { n in
                var b = CoreML_Specification_MILSpec_Argument.Binding()
                b.name = n
                return b
            }
            o.inputs[k] = a
        }
        for (n, t) in outputs {
            var nv = CoreML_Specification_MILSpec_NamedValueType()
            nv.name = n
            nv.type = t.proto
            o.outputs.append(nv)
            types[n] = t
        }
        o.attributes = attributes
        o.attributes["name"] = Self.stringValue(name ?? outputs.first?.0 ?? type)
        o.blocks = blocks
        operations.append(o)
        return outputs.map(\.0)
    }

    // MARK: nested blocks

    /// Starts a nested block: ops go to it until `endBlock`.
    mutating func beginBlock() {
        enclosing.append(operations)
        operations = []
    }

    /// Ends the nested block begun last: its ops, with `inputs` and `outputs`.
    mutating func endBlock(inputs: [(String, MILTensorType)], outputs: [String]) -> MILBlock {
        var b = MILBlock()
        b.inputs = inputs.map { n, t in
            var nv = CoreML_Specification_MILSpec_NamedValueType()
            nv.name = n
            nv.type = t.proto
            return nv
        }
        b.operations = operations
        b.outputs = outputs
        operations = enclosing.popLast() ?? []
        return b
    }

    /// Swaps the block being built with the outermost one (again to swap
    /// back): a loop body's constants go before the loop, computed once.
    mutating func swapOutermost() {
        guard !enclosing.isEmpty else { return }
        let outer = enclosing[0]
        enclosing[0] = operations
        operations = outer
    }

    /// Appends an op built by hand (outputs of types other than tensors).
    mutating func appendRaw(_ o: MILOperation) { operations.append(o) }

    /// An op with one output of `type`, named `output` (made fresh from it).
    @discardableResult
    mutating func op1(_ type: String, _ inputs: [(String, MILArgument)], output: String, _ t: MILTensorType) -> String {
        op(type, inputs, outputs: [(output, t)])[0]
    }

    // MARK: constants

    /// A `const` op holding `value` (immediate when small, in weight.bin
    /// otherwise); returns its name.
    mutating func const(_ base: String, _ value: MILConstant) -> String {
        let name = fresh(base)
        var v = MILValue()
        v.type = value.type.proto
        // Packed codes always go to the blob file (it records their padding bits).
        if let blob = value.blob, value.count >= Self.blobThreshold || value.isPacked {
            var f = CoreML_Specification_MILSpec_Value.BlobFileValue()
            f.fileName = MLPackage.modelPathPrefix + "weights/" + MLPackage.weightFileName
            f.offset = blobs.append(blob)
            v.blobFileValue = f
        } else {
            v.immediateValue.tensor = value.immediate
        }
        op("const", [], outputs: [(name, value.type)], attributes: ["val": v], name: name)
        return name
    }

    mutating func int32s(_ base: String, _ values: [Int], shape: [Int]? = nil) -> String {
        const(base, .int32(values.map { Int32(clamping: $0) }, shape: shape ?? [values.count]))
    }

    mutating func int32(_ base: String, _ value: Int) -> String { const(base, .int32([Int32(clamping: value)], shape: [])) }
    mutating func bool(_ base: String, _ value: Bool) -> String { const(base, .bools([value], shape: [])) }
    mutating func string(_ base: String, _ value: String) -> String { const(base, .string(value)) }
    mutating func float(_ base: String, _ value: Float, _ dt: MILDataType = .float32) -> String {
        const(base, dt == .float16 ? .float16([Half.bits(from: value)], shape: []) : .float32([value], shape: []))
    }
}

/// A constant's data in the forms MIL stores.
enum MILConstant {
    case float32([Float], shape: [Int])
    case float16([UInt16], shape: [Int])
    case int32([Int32], shape: [Int])
    case bools([Bool], shape: [Int])
    case uint32([UInt32], shape: [Int])
    case string(String)
    /// Packed integer codes (uint1…uint8, int4, int8) of `shape`.
    case packed(MILBlob, MILDataType, shape: [Int])

    var type: MILTensorType {
        switch self {
        case .float32(_, let s): return MILTensorType(dataType: .float32, shape: s)
        case .float16(_, let s): return MILTensorType(dataType: .float16, shape: s)
        case .int32(_, let s): return MILTensorType(dataType: .int32, shape: s)
        case .bools(_, let s): return MILTensorType(dataType: .bool, shape: s)
        case .uint32(_, let s): return MILTensorType(dataType: .uint32, shape: s)
        case .string: return MILTensorType(dataType: .string, shape: [])
        case .packed(_, let dt, let s): return MILTensorType(dataType: dt, shape: s)
        }
    }

    var count: Int {
        switch self {
        case .float32(let v, _): return v.count
        case .float16(let v, _): return v.count
        case .int32(let v, _): return v.count
        case .bools(let v, _): return v.count
        case .uint32(let v, _): return v.count
        case .string: return 1
        case .packed(_, _, let s): return s.reduce(1, *)
        }
    }

    var isPacked: Bool { if case .packed = self { return true } else { return false } }

    /// The blob form, for types the blob file holds.
    var blob: MILBlob? {
        switch self {
        case .float32(let v, _): return MILBlob(dataType: .float32, bytes: v.flatMap { littleEndianBytes($0.bitPattern) })
        case .float16(let v, _): return MILBlob(dataType: .float16, bytes: v.flatMap { littleEndianBytes($0) })
        case .packed(let b, _, _): return b
        case .int32, .bools, .uint32, .string: return nil
        }
    }

    var immediate: CoreML_Specification_MILSpec_TensorValue {
        var tv = CoreML_Specification_MILSpec_TensorValue()
        switch self {
        case .float32(let v, _):
            var r = CoreML_Specification_MILSpec_TensorValue.RepeatedFloats(); r.values = v; tv.floats = r
        case .float16(let v, _):
            var r = CoreML_Specification_MILSpec_TensorValue.RepeatedBytes()
            r.values = Data(v.flatMap { littleEndianBytes($0) }); tv.bytes = r
        case .int32(let v, _):
            var r = CoreML_Specification_MILSpec_TensorValue.RepeatedInts(); r.values = v; tv.ints = r
        case .bools(let v, _):
            var r = CoreML_Specification_MILSpec_TensorValue.RepeatedBools(); r.values = v; tv.bools = r
        case .uint32(let v, _):
            var r = CoreML_Specification_MILSpec_TensorValue.RepeatedBytes()
            r.values = Data(v.flatMap { littleEndianBytes($0) }); tv.bytes = r
        case .string(let s):
            var r = CoreML_Specification_MILSpec_TensorValue.RepeatedStrings(); r.values = [s]; tv.strings = r
        case .packed(let b, _, _):
            var r = CoreML_Specification_MILSpec_TensorValue.RepeatedBytes(); r.values = Data(b.bytes); tv.bytes = r
        }
        return tv
    }
}

func littleEndianBytes<T: FixedWidthInteger>(_ v: T) -> [UInt8] {
    (0..<(T.bitWidth / 8)).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) }
}
