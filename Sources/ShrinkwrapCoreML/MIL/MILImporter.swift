import CoreMLSchema
import Foundation
import ShrinkwrapIR
import SwiftProtobuf

/// Reads a Core ML ML Program (a `.mlpackage`, or a `.mlmodel` whose type is
/// `mlProgram` with its weights beside it) into the IR.
///
/// The function "main" (or the only one) is read at its opset's block.
/// Values keep their MIL names. `const` values become constants (fp16 ones
/// as `WeightEncoding.float16`); the constexpr ops that rebuild compressed
/// weights become compressed constants without being decoded
/// (`MILOpReaders+Constexpr.swift`). A program computed in fp16 runs in
/// float32: fp16 weights decode to float32 and casts between float types
/// become Identity. Image inputs become [1, C, H, W] float inputs of raw
/// pixel values (the program itself scales them); a classifier's labels go
/// into the metadata.
public enum MILImporter {
    public static let format = "Core ML ML Program"

    /// MIL ops the importer reads.
    public static var supportedOps: [String] { MILOpReaders.table.keys.sorted() }

    /// Imports a `.mlpackage` folder.
    public static func importPackage(at url: URL) throws -> Graph {
        let modelURL = try MLPackage.rootModel(of: url)
        let model = try readModel(at: modelURL)
        return try importProgram(model, modelFile: modelURL, package: url)
    }

    /// Reads and parses a model file (at most 2 GB).
    static func readModel(at url: URL) throws -> CoreML_Specification_Model {
        let data: Data
        do { data = try Data(contentsOf: url, options: .mappedIfSafe) } catch {
            throw ImportError.unreadable(file: url.path, reason: (error as NSError).localizedDescription)
        }
        return try parse(data, file: url.path)
    }

    static func parse(_ data: Data, file: String) throws -> CoreML_Specification_Model {
        if data.isEmpty { throw ImportError.malformed(SourceLocation(file: file), reason: "file is empty") }
        do {
            var options = BinaryDecodingOptions()
            options.messageDepthLimit = 64
            return try CoreML_Specification_Model(serializedBytes: data, options: options)
        } catch {
            throw ImportError.malformed(SourceLocation(file: file), reason: "not a Core ML protobuf (\(error))")
        }
    }

    /// Imports a parsed model whose type is `mlProgram`. Blob files are
    /// resolved next to `modelFile`; with `package` they must stay inside it.
    public static func importProgram(_ model: CoreML_Specification_Model, modelFile: URL, package: URL?) throws -> Graph {
        let file = modelFile.path
        return try importProgram(model, file: file, blobs: MILBlobFiles(modelFile: modelFile, package: package, file: file))
    }

    /// Imports a parsed ML Program whose blob files are given in memory, by the names the program
    /// uses ("@model_path/weights/weight.bin"); nothing is read from disk (the fuzz harness).
    public static func importProgram(_ model: CoreML_Specification_Model, file: String, blobFiles: [String: [UInt8]]) throws -> Graph {
        try importProgram(model, file: file, blobs: MILBlobFiles(memory: blobFiles, file: file))
    }

    static func importProgram(_ model: CoreML_Specification_Model, file: String, blobs: MILBlobFiles) throws -> Graph {
        guard case .mlProgram(let program)? = model.type else {
            throw ImportError.malformed(SourceLocation(file: file), reason: "the model is not an ML Program")
        }
        var reader = MILReader(file: file, blobs: blobs)
        var graph = try reader.read(program, description: model.description_p)
        graph.sourceFormat = "mlprogram"
        graph.sourceVersion = "ML Program, opset \(reader.opset)\(MILImporter.deploymentTarget(reader.opset).map { " (\($0))" } ?? ""), specification \(model.specificationVersion)"
        graph.metadata.properties.append(("coreml.opset", reader.opset))
        graph = graph.restoringOriginalNames(file: file)
        do {
            return try graph.checkedAgainstOpTable(file: file).validatedAndSorted()
        } catch let e as GraphError {
            throw ImportError.malformed(SourceLocation(file: file, place: "ML Program"), reason: e.description)
        }
    }

    /// The OS a MIL opset belongs to, as coremltools names them ("CoreML5" → "iOS 15", specification 6).
    public static func deploymentTarget(_ opset: String) -> String? {
        ["CoreML5": "iOS 15", "CoreML6": "iOS 16", "CoreML7": "iOS 17", "CoreML8": "iOS 18", "CoreML9": "iOS 26"][opset]
    }
}

/// The blob files a program names, each read once (one reader per file).
final class MILBlobFiles {
    let modelFile: URL?, package: URL?, file: String
    /// Blob files given in memory, by name (then nothing is read from disk).
    let memory: [String: [UInt8]]?
    private var readers: [String: MILBlobReader] = [:]
    /// Blob files larger than this are refused.
    static let limit = 1 << 33

    init(modelFile: URL, package: URL?, file: String) {
        self.modelFile = modelFile; self.package = package; self.file = file; memory = nil
    }

    init(memory: [String: [UInt8]], file: String) { modelFile = nil; package = nil; self.file = file; self.memory = memory }

    func reader(_ name: String, describedBy loc: SourceLocation) throws -> MILBlobReader {
        if let r = readers[name] { return r }
        guard let modelFile else {
            guard let bytes = memory?[name] else { throw ImportError.badExternalData(loc, reason: "no blob file '\(name)' given") }
            let r = try MILBlobReader(bytes: bytes, file: name)
            readers[name] = r
            return r
        }
        let url = try MLPackage.blobFile(name, modelFile: modelFile, package: package, describedBy: loc)
        let size = (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber)??.intValue ?? 0
        guard size <= Self.limit else { throw ImportError.unreadable(file: url.path, reason: "\(size) bytes, more than the \(Self.limit)-byte limit") }
        let data: Data
        do { data = try Data(contentsOf: url, options: .mappedIfSafe) } catch {
            throw ImportError.unreadable(file: url.path, reason: (error as NSError).localizedDescription)
        }
        let r = try MILBlobReader(bytes: [UInt8](data), file: url.path)
        readers[name] = r
        return r
    }
}

typealias MILOperation = CoreML_Specification_MILSpec_Operation
typealias MILValue = CoreML_Specification_MILSpec_Value

/// The state of one program's translation: value types, constants, the graph.
struct MILReader {
    let file: String
    let blobs: MILBlobFiles
    var opset = ""
    var graph = Graph()
    var names = NameAllocator()
    /// Declared dtype (nil: not a tensor the IR holds) and shape (nil: not fixed) of every MIL value.
    var types: [String: (dtype: DType?, shape: [Int]?)] = [:]
    /// Constant values by name: literals (what parameters read) and weights (what tensor inputs read).
    var literals: [String: MILLiteral] = [:]
    var weights: [String: WeightEncoding] = [:]
    /// List values (`MILOpReaders+Lists.swift`), each held as a tensor [length, element…].
    var lists: [String: MILList] = [:]
    /// The zeros each make_list of this graph level made, with their constants (dropped when unread).
    var emptyLists: [String: [String]] = [:]
    /// The operation being read, and where it is.
    var op = MILOperation()
    var place = ""

    init(file: String, blobs: MILBlobFiles) { self.file = file; self.blobs = blobs }

    func loc(_ place: String) -> SourceLocation { SourceLocation(file: file, place: place) }

    mutating func read(_ program: CoreML_Specification_MILSpec_Program, description d: CoreML_Specification_ModelDescription) throws -> Graph {
        let name: String
        if program.functions["main"] != nil { name = "main" } else if program.functions.count == 1, let only = program.functions.keys.first {
            name = only
        } else {
            throw ImportError.malformed(loc("program"), reason: "no function \"main\" among \(program.functions.keys.sorted())")
        }
        guard let function = program.functions[name] else { throw ImportError.malformed(loc("program"), reason: "no function") }
        opset = function.opset
        guard let block = function.blockSpecializations[opset] else {
            throw ImportError.malformed(loc("function '\(name)'"), reason: "no block for its opset '\(opset)' (blocks: \(function.blockSpecializations.keys.sorted()))")
        }
        graph.metadata = ModelReader.readMetadata(d)
        try readInputs(function, description: d)
        names = NameAllocator(.suffixed, taken: graph.inputs.map(\.name))
        reserveNames(block.operations)
        try readOperations(block.operations, place: "function '\(name)'")
        try readOutputs(block.outputs, description: d)
        dropUnreadEmptyLists()
        return graph
    }

    /// Reserves every value name the operations define, in nested blocks too (their inputs as well).
    mutating func reserveNames(_ ops: [MILOperation]) {
        for o in ops {
            for v in o.outputs { names.reserve(v.name) }
            for b in o.blocks {
                for v in b.inputs { names.reserve(v.name) }
                reserveNames(b.operations)
            }
        }
    }

    /// The function's inputs, typed as the model description says (images, flexible shapes).
    mutating func readInputs(_ f: CoreML_Specification_MILSpec_Function, description d: CoreML_Specification_ModelDescription) throws {
        for (k, input) in f.inputs.enumerated() {
            let place = "function input[\(k)] '\(input.name)'"
            guard case .tensorType(let t)? = input.type.type else { throw ImportError.unsupported(loc(place), what: "a non-tensor input") }
            guard let dtype = MILTypes.dtype(t.dataType), [.float32, .int32].contains(dtype) else {
                throw ImportError.unsupported(loc(place), what: "input type \(MILTypes.name(t.dataType)) (fp16, fp32 and int32 tensors are read)")
            }
            var dims: [Dim] = []
            for (a, dim) in t.dimensions.enumerated() {
                switch dim.dimension {
                case .constant(let c)?:
                    guard c.size > 0, c.size <= 1 << 31 else { throw ImportError.malformed(loc(place), reason: "dimension \(a) is \(c.size)") }
                    dims.append(.fixed(Int(c.size)))
                default: dims.append(.symbolic(a == 0 ? "batch" : "\(input.name)_d\(a)"))
                }
            }
            let feature = d.input.first { $0.name == input.name }
            switch feature?.type.type {
            case .imageType(let i)?:
                let color: ColorLayout
                switch i.colorSpace {
                case .grayscale: color = .gray
                case .rgb: color = .rgb
                case .bgr: color = .bgr
                default: throw ImportError.unsupported(loc(place), what: "image color space \(i.colorSpace)")
                }
                graph.metadata.imageInputs.append(ImageInput(name: input.name, color: color))
            case .multiArrayType(let a)?:
                // Default sizes where the program leaves a dimension free, symbolic where the description lets it vary.
                let free = ModelReader.flexibleAxes(a) ?? []
                if a.shape.count == dims.count {
                    for axis in dims.indices {
                        if free.contains(axis) { dims[axis] = .symbolic(axis == 0 ? "batch" : "\(input.name)_d\(axis)") }
                        else if a.shape[axis] > 0, a.shape[axis] <= 1 << 31 { dims[axis] = .fixed(Int(a.shape[axis])) }
                    }
                }
            default: break
            }
            graph.inputs.append(ValueInfo(name: input.name, dtype: dtype, shape: dims, docString: feature?.shortDescription ?? ""))
            types[input.name] = (dtype, dims.allSatisfy { $0.value != nil } ? dims.compactMap(\.value) : nil)
        }
    }

    mutating func readOperations(_ ops: [MILOperation], place: String) throws {
        var unsupported: [String] = []
        for (k, o) in ops.enumerated() {
            op = o
            self.place = "\(place) operation[\(k)] \(o.type) '\(o.outputs.first?.name ?? "")'"
            guard !o.outputs.isEmpty else { throw ImportError.malformed(loc(self.place), reason: "no outputs") }
            for v in o.outputs {
                guard !v.name.isEmpty else { throw ImportError.malformed(loc(self.place), reason: "an output without a name") }
                if case .tensorType(let t)? = v.type.type { types[v.name] = (MILTypes.dtype(t.dataType), MILTypes.fixedShape(t)) }
                else { types[v.name] = (nil, nil) }
            }
            guard let reader = MILOpReaders.table[o.type] else {
                if !unsupported.contains(o.type) { unsupported.append(o.type) }
                continue
            }
            let nested = MILOpReaders.unsupported(in: o.blocks)
            for t in nested where !unsupported.contains(t) { unsupported.append(t) }
            if !unsupported.isEmpty { continue }  // keep collecting op types; nothing after an unknown op can be read
            do {
                try reader(&self)
            } catch let e as WeightLayoutError {
                throw ImportError.badTensor(loc(self.place), reason: e.reason)
            } catch let e as MILLiteral.DecodeError {
                throw ImportError.badTensor(loc(self.place), reason: e.reason)
            }
        }
        if !unsupported.isEmpty { throw ImportError.unsupportedOps(file: file, ops: unsupported.sorted()) }
    }

    /// The block's outputs, typed from the description; a classifier's labels into the metadata.
    mutating func readOutputs(_ outputs: [String], description d: CoreML_Specification_ModelDescription) throws {
        for (k, name) in outputs.enumerated() {
            let place = "block output[\(k)] '\(name)'"
            if graph.metadata.labels.isEmpty == false, name == d.predictedFeatureName { continue }  // the class label
            if literals[name] != nil || weights[name] != nil { _ = try tensor(name, place: place) }
            guard let t = types[name], t.dtype != nil || graph.inputs.contains(where: { $0.name == name }) else {
                throw ImportError.malformed(loc(place), reason: "not a tensor value of the program")
            }
            let feature = d.output.first { $0.name == name }
            let shape = t.shape.map { $0.map(Dim.fixed) }
            graph.outputs.append(ValueInfo(name: name, dtype: t.dtype, shape: shape, docString: feature?.shortDescription ?? ""))
        }
        if graph.outputs.isEmpty { throw ImportError.malformed(loc("block outputs"), reason: "the program has no tensor output") }
    }
}

// MARK: - Values

extension MILReader {
    /// The IR value for a MIL value name: a constant is added to the graph on first use.
    mutating func tensor(_ name: String, place: String) throws -> String {
        if graph.isConstant(name) { return name }
        if let w = weights[name] { graph.setConstant(Constant(name: name, encoding: w)); return name }
        if let l = literals[name] {
            guard let e = l.encoding else { throw ImportError.malformed(loc(place), reason: "'\(name)' is a string, not a tensor") }
            graph.setConstant(Constant(name: name, encoding: e))
            return name
        }
        guard types[name] != nil else { throw ImportError.malformed(loc(place), reason: "reads unknown value '\(name)'") }
        guard types[name]?.dtype != nil else { throw ImportError.unsupported(loc(place), what: "value '\(name)' is not a tensor") }
        return name
    }

    /// The bindings of input `key` of the current op.
    func bindings(_ key: String) -> [CoreML_Specification_MILSpec_Argument.Binding]? {
        guard let a = op.inputs[key], !a.arguments.isEmpty else { return nil }
        return a.arguments
    }

    /// Whether input `key` is computed at run time (not a constant).
    func isComputed(_ key: String) -> Bool {
        guard case .name(let n)? = bindings(key)?.first?.binding else { return false }
        return literals[n] == nil && weights[n] == nil
    }

    /// Tensor input `key` (required).
    mutating func x(_ key: String = "x") throws -> String {
        guard let v = try opt(key) else { throw ImportError.malformed(loc(place), reason: "no input '\(key)'") }
        return v
    }

    /// Tensor input `key`, nil when absent.
    mutating func opt(_ key: String) throws -> String? {
        guard let b = bindings(key) else { return nil }
        return try bound(b[0], key)
    }

    /// Every binding of a variadic input (concat's values).
    mutating func list(_ key: String) throws -> [String] {
        guard let b = bindings(key) else { throw ImportError.malformed(loc(place), reason: "no input '\(key)'") }
        return try b.map { try bound($0, key) }
    }

    mutating func bound(_ b: CoreML_Specification_MILSpec_Argument.Binding, _ key: String) throws -> String {
        switch b.binding {
        case .name(let n)?: return try tensor(n, place: "\(place) input '\(key)'")
        case .value(let v)?:
            let l = try literal(v, place: "\(place) input '\(key)'")
            guard let e = l.encoding else { throw ImportError.malformed(loc(place), reason: "input '\(key)' is a string, not a tensor") }
            return constant(e, "\(op.outputs.first?.name ?? "op")_\(key)")
        case nil: throw ImportError.malformed(loc(place), reason: "input '\(key)' binds nothing")
        }
    }

    /// A constant parameter: input `key` bound to a const value (or an inline one); nil when absent.
    func param(_ key: String) throws -> MILLiteral? {
        guard let b = bindings(key) else {
            // iOS 16 constexpr ops carry their constant inputs as attributes.
            if key != "name", let v = op.attributes[key] { return try literal(v, place: "\(place) attribute '\(key)'") }
            return nil
        }
        switch b[0].binding {
        case .name(let n)?:
            if let l = literals[n] { return l }
            if let w = weights[n] { return MILLiteral(tensor: w.decoded()) }
            throw ImportError.unsupported(loc(place), what: "input '\(key)' must be a constant, '\(n)' is computed")
        case .value(let v)?: return try literal(v, place: "\(place) input '\(key)'")
        case nil: throw ImportError.malformed(loc(place), reason: "input '\(key)' binds nothing")
        }
    }

    /// Decodes a Value (immediate or blob) into a literal.
    func literal(_ v: MILValue, place: String) throws -> MILLiteral {
        guard case .tensorType(let t)? = v.type.type else { throw ImportError.unsupported(loc(place), what: "a non-tensor constant") }
        guard let shape = MILTypes.fixedShape(t), shape.count == Int(t.rank) || t.rank == 0 && shape.isEmpty else {
            throw ImportError.malformed(loc(place), reason: "a constant without a fixed shape (rank \(t.rank))")
        }
        do {
            switch v.value {
            case .immediateValue(let i)?:
                guard case .tensor(let tv)? = i.value else { throw ImportError.unsupported(loc(place), what: "a non-tensor immediate value") }
                return try MILLiteral(immediate: tv, type: t.dataType, shape: shape)
            case .blobFileValue(let b)?:
                let r = try blobs.reader(b.fileName, describedBy: loc(place))
                return try MILLiteral(blob: try r.blob(at: b.offset), type: t.dataType, shape: shape)
            case nil: throw ImportError.malformed(loc(place), reason: "a constant without a value")
            }
        } catch let e as MILLiteral.DecodeError {
            throw ImportError.badTensor(loc(place), reason: e.reason)
        }
    }

    /// A new constant with a fresh name.
    mutating func constant(_ e: WeightEncoding, _ hint: String) -> String {
        let n = names.fresh(hint)
        graph.setConstant(Constant(name: n, encoding: e))
        return n
    }

    mutating func ints(_ v: [Int], _ hint: String) -> String { constant(.dense(Tensor(ints: v.map(Int64.init), shape: [v.count])), hint) }
    mutating func scalar(_ v: Float, _ hint: String) -> String { constant(.dense(.scalar(v)), hint) }

    /// Adds a node.
    mutating func node(_ type: String, _ inputs: [String], _ outputs: [String], _ attributes: [String: Attribute] = [:]) {
        graph.nodes.append(Node(name: outputs.first ?? type, opType: type, inputs: inputs, outputs: outputs, attributes: attributes))
    }

    /// A fresh intermediate value name.
    mutating func temp(_ hint: String) -> String { names.fresh("\(out())_\(hint)") }

    /// Output `i` of the current op.
    func out(_ i: Int = 0) -> String { i < op.outputs.count ? op.outputs[i].name : "" }

    /// The declared shape of a value, when fixed.
    func shape(_ name: String) -> [Int]? {
        if let s = types[name]?.shape { return s }
        if let c = graph.constant(named: name) { return c.encoding.shape }
        return nil
    }

    func rank(_ name: String) -> Int? { shape(name)?.count }

    func bad(_ reason: String) -> ImportError { ImportError.malformed(loc(place), reason: reason) }
    func refuse(_ what: String) -> ImportError { ImportError.unsupported(loc(place), what: what) }
}

extension MILLiteral {
    /// A literal holding an IR tensor's values.
    init(tensor t: Tensor) {
        let type = MILTypes.milType(t.dtype) ?? .float32
        switch t.storage {
        case .float(let a): self.init(type: type, shape: t.shape, elements: .floats(a))
        case .int(let a): self.init(type: type, shape: t.shape, elements: .ints(a))
        case .bool(let a): self.init(type: .bool, shape: t.shape, elements: .bools(a))
        }
    }

    /// The elements as Int (floats truncated), nil for strings.
    var intValues: [Int]? {
        switch elements {
        case .ints(let a): return a.map { Int(clamping: $0) }
        case .bools(let a): return a.map { $0 ? 1 : 0 }
        case .floats(let a): return a.allSatisfy { $0.isFinite && abs($0) < 1e15 } ? a.map { Int($0) } : nil
        case .half(let a): return a.map(Half.float(fromBits:)).allSatisfy { $0.isFinite } ? a.map { Int(Half.float(fromBits: $0)) } : nil
        case .strings: return nil
        }
    }

    var floatValues: [Float]? {
        switch elements {
        case .ints(let a): return a.map { Float($0) }
        case .bools(let a): return a.map { $0 ? 1 : 0 }
        case .floats(let a): return a
        case .half(let a): return a.map(Half.float(fromBits:))
        case .strings: return nil
        }
    }

    var boolValues: [Bool]? {
        switch elements {
        case .bools(let a): return a
        case .ints(let a): return a.map { $0 != 0 }
        default: return nil
        }
    }
}

/// An ML Program's own ops, as `inspect` shows them.
public struct MILProgramSummary: Sendable {
    /// The main function's opset ("CoreML8").
    public var opset: String
    /// MIL op type → count, in every block at any depth.
    public var ops: [String: Int]
    /// Name of each value a constexpr op makes (a compressed weight) → that op.
    public var weightOps: [String: String]
}

extension MILImporter {
    /// The summary of an `.mlpackage` folder or an `.mlmodel` file holding an ML Program (nil for other models).
    public static func programSummary(at url: URL) throws -> MILProgramSummary? {
        var isFolder: ObjCBool = false
        let isPackage = FileManager.default.fileExists(atPath: url.path, isDirectory: &isFolder) && isFolder.boolValue
        let model = try readModel(at: isPackage ? try MLPackage.rootModel(of: url) : url)
        guard case .mlProgram(let p)? = model.type, let main = p.functions["main"], let block = main.blockSpecializations[main.opset] else {
            return nil
        }
        var s = MILProgramSummary(opset: main.opset, ops: [:], weightOps: [:])
        func walk(_ b: CoreML_Specification_MILSpec_Block) {
            for o in b.operations {
                s.ops[o.type, default: 0] += 1
                if o.type.hasPrefix("constexpr_") { for out in o.outputs { s.weightOps[out.name] = o.type } }
                o.blocks.forEach(walk)
            }
        }
        walk(block)
        return s
    }
}
