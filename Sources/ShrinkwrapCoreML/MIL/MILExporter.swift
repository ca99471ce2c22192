import CoreMLSchema
import Foundation
import ShrinkwrapIR
import SwiftProtobuf

/// Writes a graph as a Core ML ML Program: a `.mlpackage` folder holding the
/// Model message (`mlProgram`) and the blob file of its weights.
///
/// The graph must be prepared (`ExportPreparation.prepare` in the runtime):
/// fixed input shapes and a shape for every value. Each IR op becomes one or
/// a few MIL ops (`MILOpWriters.table`); ops without one are collected and
/// listed at once. Weights keep their encoding: float16 constants, and the
/// `constexpr_*` ops of iOS 16 and iOS 18 for linear and lookup-table codes
/// (`MILWeights`). The deployment target is the lowest that holds every op
/// and weight, unless one is asked for; then what needs a later one is
/// listed with the target that would hold it.
public enum MILExporter {
    public static let format = "Core ML ML Program"
    /// User-defined metadata with the source's names of the inputs and outputs MIL renamed
    /// (JSON {"MIL name": "original name"}); the importer restores them.
    public static let originalNamesKey = "com.github.shrinkwrap.original-names"

    /// The deployment targets, with the specification version and the MIL
    /// opset each one means.
    public enum Target: Int, Sendable, CaseIterable, Comparable, CustomStringConvertible {
        case iOS15 = 15, iOS16, iOS17, iOS18

        public var specificationVersion: Int32 { Int32(rawValue - 9) }
        public var opset: String { "CoreML\(rawValue - 10)" }
        public var description: String { "iOS\(rawValue)" }
        public static func < (a: Target, b: Target) -> Bool { a.rawValue < b.rawValue }

        /// "iOS16", "ios16", "16" → .iOS16.
        public init?(named s: String) {
            let digits = s.lowercased().hasPrefix("ios") ? String(s.dropFirst(3)) : s
            guard let v = Int(digits), let t = Target(rawValue: v) else { return nil }
            self = t
        }
    }

    /// How the program computes floats.
    public enum Precision: String, Sendable, CaseIterable {
        case float32, float16
    }

    public struct Options: Sendable, Equatable {
        /// nil: the lowest target that holds the model.
        public var target: Target?
        public var precision: Precision
        public init(target: Target? = nil, precision: Precision = .float32) { self.target = target; self.precision = precision }
    }

    /// A written package: the model message's bytes and the blob file's.
    public struct Package: Sendable {
        public var model: Data
        public var weights: [UInt8]
        public var target: Target
        /// The files of the package folder, relative to it.
        public var files: [(path: String, data: Data)] { MLPackage.files(model: model, weights: weights) }
    }

    /// IR ops the exporter can write (some only for certain attributes or
    /// shapes): its op writers', and those its lowering passes rewrite.
    public static var supportedOps: [String] { Set(MILOpWriters.table.keys).union(MILLowering.pipeline.loweredOps).sorted() }

    public static let weightStorage = "float16 constants; linear codes as constexpr_affine_dequantize (iOS 16: 8 bits, a scale per tensor or output channel) or constexpr_blockwise_shift_scale (iOS 18: 4 / 8 bits, per tensor, channel or block); lookup tables as constexpr_lut_to_dense (iOS 16: one per weight, 1/2/4/6/8 bits; iOS 18: also 3 bits and per grouped channel); integer zero points only"

    /// What the newest target stores.
    public static var storedWeights: StoredWeightForms { MILWeights.stored(for: .iOS18) }

    /// What a target stores.
    public static func storedWeights(for target: Target) -> StoredWeightForms { MILWeights.stored(for: target) }

    /// Writes a prepared graph.
    public static func export(_ graph: Graph, options: Options = Options()) throws -> Package {
        let (model, weights, target) = try exportModel(graph, options: options)
        return Package(model: try serialize(model), weights: weights, target: target)
    }

    /// The Model message and the blob file of a prepared graph.
    static func exportModel(_ graph: Graph, options: Options) throws -> (CoreML_Specification_Model, [UInt8], Target) {
        if !graph.metadata.updatableNodes.isEmpty {
            throw ExportError.unsupported(format: format, what: "an updatable model (layers trained on device: \(graph.metadata.updatableNodes.prefix(3).joined(separator: ", "))…) — Core ML trains NeuralNetwork models only; write it as .mlmodel")
        }
        let lowered = try MILLowering.pipeline.applied(to: graph)
        let needed = try MILWeights.lowestTarget(for: lowered)
        var target = needed.target
        if let asked = options.target {
            if asked < needed.target {
                throw ExportError.unsupported(format: format, what: "\(needed.reasons.joined(separator: "; ")) — target \(asked) cannot hold them; use --target \(needed.target) or later")
            }
            target = asked
        }
        var w = MILWriter(graph: lowered, target: target, precision: options.precision)
        let program = try w.program()
        var model = CoreML_Specification_Model()
        model.specificationVersion = target.specificationVersion
        model.description_p = try w.modelDescription()
        model.mlProgram = program
        return (model, w.builder.blobs.bytes, target)
    }

    static func serialize(_ model: CoreML_Specification_Model) throws -> Data {
        var encoding = BinaryEncodingOptions()
        encoding.useDeterministicOrdering = true  // MIL is map-heavy; the same graph must give the same bytes
        do { return try model.serializedData(options: encoding) } catch {
            throw ExportError.unsupported(format: format, what: "cannot serialize the model: \(error)")
        }
    }
}

/// Thrown by an op writer when the node's attributes or shapes have no MIL form.
struct MILWriterError: Error {
    let reason: String
    init(_ reason: String) { self.reason = reason }
}

/// The state of one export: the program being built and where each IR value went.
struct MILWriter {
    let graph: Graph
    let target: MILExporter.Target
    let precision: MILExporter.Precision
    var builder = MILProgramBuilder()
    /// IR value name → MIL value name.
    var names: [String: String] = [:]
    /// Program inputs as declared (float32 when computing in float16: cast inside).
    var inputs: [CoreML_Specification_MILSpec_NamedValueType] = []
    /// Block outputs (MIL names) in graph output order.
    var outputs: [String] = []
    /// Graph outputs → the MIL names reserved for them, until an op takes the name.
    var reservedOutputs: [String: String] = [:]
    /// The classifier's outputs, when the program ends in `classify`.
    var classifier: (label: String, probs: String)?

    init(graph: Graph, target: MILExporter.Target, precision: MILExporter.Precision) {
        self.graph = graph; self.target = target; self.precision = precision
    }

    /// Whether a value is read by a node or is a graph output.
    func isRead(_ v: String) -> Bool {
        graph.outputs.contains { $0.name == v } || graph.nodes.contains { $0.inputs.contains(v) }
    }

    /// The element type floats compute in.
    var floatType: MILDataType { precision == .float16 ? .float16 : .float32 }

    mutating func program() throws -> CoreML_Specification_MILSpec_Program {
        try writeInputs()
        // Output names are kept for the ops that produce the outputs (or their final cast / identity).
        for o in graph.outputs where !names.keys.contains(o.name) {
            let want = MILProgramBuilder.sanitized(o.name)
            if builder.reserve(want) { reservedOutputs[o.name] = want }
        }
        let unsupported = try writeNodes()
        if !unsupported.isEmpty { throw ExportError.unsupportedOps(format: MILExporter.format, ops: unsupported) }
        try writeOutputs()
        var block = CoreML_Specification_MILSpec_Block()
        block.operations = builder.operations
        block.outputs = outputs
        var f = CoreML_Specification_MILSpec_Function()
        f.inputs = inputs
        f.opset = target.opset
        f.blockSpecializations[target.opset] = block
        var p = CoreML_Specification_MILSpec_Program()
        p.version = 1
        p.functions["main"] = f
        return p
    }

    /// Writes every node of the graph in order; returns the ones without a
    /// MIL form (op and why), each once (nodes reading what a failed node
    /// should have made are not listed again). Other errors (weights without
    /// a form) are thrown.
    mutating func writeNodes() throws -> [String] {
        var unsupported: [String] = []
        var missing = Set<String>()
        for node in graph.nodes {
            if node.inputs.contains(where: missing.contains) {
                missing.formUnion(node.outputs)
                continue
            }
            guard let writer = MILOpWriters.table[node.opType] else {
                unsupported.append("\(node.opType) (node '\(node.label)')")
                missing.formUnion(node.outputs)
                continue
            }
            do { try writer(&self, node) } catch let e as MILWriterError {
                unsupported.append("\(node.opType) (node '\(node.label)': \(e.reason))")
                missing.formUnion(node.outputs)
            }
        }
        return unsupported
    }

    // MARK: inputs and outputs

    mutating func writeInputs() throws {
        for i in graph.runtimeInputs {
            let name = MILProgramBuilder.sanitized(i.name)
            guard builder.reserve(name) else {
                throw ExportError.unsupported(format: MILExporter.format, what: "two inputs are both named '\(name)' once made valid MIL names")
            }
            let declared = try declaredType(i.name, i.dtype)
            var nv = CoreML_Specification_MILSpec_NamedValueType()
            nv.name = name
            nv.type = declared.proto
            inputs.append(nv)
            builder.declare(name, declared)
            names[i.name] = name
            if declared.dataType == .float32 && floatType == .float16 {
                names[i.name] = cast(name, to: .float16, base: name + "_to_fp16")
            }
        }
    }

    mutating func writeOutputs() throws {
        if let p = probabilityOutput() {
            let c = try writeClassifier(probabilities: p)
            classifier = c
            outputs = [c.label, c.probs]
            return
        }
        for o in graph.outputs {
            var v = try value(o.name)
            let isFloat16 = builder.types[v]?.dataType == .float16
            // The op computing the output took its name (define): nothing to add.
            if v == MILProgramBuilder.sanitized(o.name), !isFloat16, !graph.isConstant(o.name), !inputs.contains(where: { $0.name == v }),
               !outputs.contains(v) {
                outputs.append(v)
                continue
            }
            // Otherwise an op named as the description says: the reserved name when no op took it
            // (a float16 value cast back, a constant, an input).
            let final = reservedOutputs.removeValue(forKey: o.name) ?? builder.fresh(MILProgramBuilder.sanitized(o.name))
            if isFloat16 {
                let dtype = builder.string(final + "_dtype", "fp32")
                v = builder.op1("cast", [("x", .value(v)), ("dtype", .value(dtype))], output: final,
                                MILTensorType(dataType: .float32, shape: builder.types[v]?.shape ?? []))
            } else {
                v = builder.op1("identity", [("x", .value(v))], output: final, try type(of: v))
            }
            outputs.append(v)
        }
    }

    /// The type an input or output is declared with: Core ML's multiarrays
    /// are float32, float16 or int32.
    func declaredType(_ name: String, _ dtype: DType?) throws -> MILTensorType {
        guard let shape = graph.inputs.first(where: { $0.name == name })?.staticShape ?? graph.valueInfo[name]?.staticShape else {
            throw ExportError.unsupported(format: MILExporter.format, what: "'\(name)' has no fixed shape")
        }
        return MILTensorType(dataType: try MILWriter.dataType(dtype ?? .float32, name: name), shape: shape)
    }

    static func dataType(_ d: DType, name: String) throws -> MILDataType {
        switch d {
        case .float32, .float64: return .float32
        case .float16: return .float16
        case .int32, .int64, .int16, .uint16, .uint32, .uint64: return .int32
        case .int8: return .int8
        case .uint8: return .uint8
        case .bool: return .bool
        case .bfloat16:
            throw ExportError.unsupported(format: MILExporter.format, what: "'\(name)' is bfloat16")
        }
    }

    // MARK: values

    /// The MIL value of an IR value (weights are written on first use).
    mutating func value(_ irName: String) throws -> String {
        if let v = names[irName] { return v }
        if let c = graph.constant(named: irName) {
            let v = try MILWeights.write(c, in: &self)
            names[irName] = v
            return v
        }
        throw MILWriterError("value '\(irName)' is not defined before it is used")
    }

    func type(of milName: String) throws -> MILTensorType {
        guard let t = builder.types[milName] else { throw MILWriterError("no type for '\(milName)'") }
        return t
    }

    /// The static shape of an IR value.
    func shape(_ irName: String) throws -> [Int] {
        if let c = graph.constant(named: irName) { return c.encoding.shape }
        if let s = graph.inputs.first(where: { $0.name == irName })?.staticShape ?? graph.valueInfo[irName]?.staticShape { return s }
        throw MILWriterError("'\(irName)' has no fixed shape")
    }

    /// The MIL type an IR value computes in.
    func computeType(_ irName: String) throws -> MILTensorType {
        let dtype = graph.constant(named: irName)?.encoding.dtype ?? graph.valueInfo[irName]?.dtype
            ?? graph.inputs.first(where: { $0.name == irName })?.dtype ?? .float32
        var dt = try MILWriter.dataType(dtype, name: irName)
        if dt == .float32 { dt = floatType }
        return MILTensorType(dataType: dt, shape: try shape(irName))
    }

    /// Defines the MIL name of an IR output (fresh, derived from it).
    mutating func define(_ irName: String) -> String {
        // A graph output computed in its declared type is written under its own (reserved) name.
        if let n = reservedOutputs[irName], (try? computeType(irName).dataType) != .float16 {
            reservedOutputs[irName] = nil
            names[irName] = n
            return n
        }
        let n = builder.fresh(irName)
        names[irName] = n
        return n
    }

    /// Writes op `type` computing the node's first output from `inputs`.
    @discardableResult
    mutating func emit(_ node: Node, _ type: String, _ inputs: [(String, MILArgument)], output k: Int = 0) throws -> String {
        guard k < node.outputs.count, !node.outputs[k].isEmpty else { throw MILWriterError("no output \(k)") }
        let t = try computeType(node.outputs[k])
        let name = define(node.outputs[k])
        return builder.op1(type, inputs, output: name, t)
    }

    mutating func cast(_ v: String, to dt: MILDataType, base: String) -> String {
        let shape = builder.types[v]?.shape ?? []
        let dtype = builder.string(base + "_dtype", dt == .float16 ? "fp16" : dt == .float32 ? "fp32" : dt == .int32 ? "int32" : "bool")
        return builder.op1("cast", [("x", .value(v)), ("dtype", .value(dtype))], output: builder.fresh(base),
                           MILTensorType(dataType: dt, shape: shape))
    }

    // MARK: parameters

    mutating func ints(_ node: Node, _ key: String, _ v: [Int]) -> String { builder.int32s("\(node.outputs.first ?? key)_\(key)", v) }
    mutating func int(_ node: Node, _ key: String, _ v: Int) -> String { builder.int32("\(node.outputs.first ?? key)_\(key)", v) }
    mutating func bool(_ node: Node, _ key: String, _ v: Bool) -> String { builder.bool("\(node.outputs.first ?? key)_\(key)", v) }
    mutating func string(_ node: Node, _ key: String, _ v: String) -> String { builder.string("\(node.outputs.first ?? key)_\(key)", v) }
    mutating func float(_ node: Node, _ key: String, _ v: Float) -> String { builder.float("\(node.outputs.first ?? key)_\(key)", v, floatType) }

    /// The values of a constant integer input (axes, shapes, pads).
    func constInts(_ irName: String?) -> [Int]? {
        guard let irName, let c = graph.constant(named: irName), case .dense(let t) = c.encoding else { return nil }
        switch t.storage {
        case .int(let v): return v.map { Int($0) }
        case .float(let v): return v.allSatisfy({ $0 == $0.rounded() && abs($0) < 1e15 }) ? v.map { Int($0) } : nil
        case .bool: return nil
        }
    }

    /// The values of a constant float input (scalars such as Clip's bounds).
    func constFloats(_ irName: String?) -> [Float]? {
        guard let irName, let c = graph.constant(named: irName), case .dense(let t) = c.encoding, case .float(let v) = t.storage else { return nil }
        return v
    }
}
