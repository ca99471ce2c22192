import Foundation
import ONNXSchema
import ShrinkwrapIR
import SwiftProtobuf

/// Reads an ONNX model into the IR.
///
/// Op semantics in the IR are ONNX's at the newest opset; older forms are
/// rewritten here (see `ONNXOps`). Every unsupported op is collected before
/// the importer throws, so the user sees the whole list at once.
public enum ONNXImporter {
    /// Default-domain opsets the importer accepts.
    public static let supportedOpsets = 6...28

    /// Imports a model file. External data is resolved against its folder.
    /// The file is mapped, not read: large initializers are decoded straight
    /// from it (see `ONNXRawDataScan`) and their pages dropped once decoded.
    public static func importModel(at url: URL) throws -> Graph {
        let file = url.path
        let directory = url.deletingLastPathComponent()
        if let mapped = MappedFile(path: file) {
            return try importModel(bytes: mapped.bytes, file: file, directory: directory, release: mapped.release)
        }
        let data: Data
        do {
            data = try Data(contentsOf: url, options: .mappedIfSafe)
        } catch {
            throw ImportError.unreadable(file: file, reason: (error as NSError).localizedDescription)
        }
        return try importModel(data: data, file: file, directory: directory)
    }

    /// Imports model bytes; `file` names them in errors.
    public static func importModel(data: Data, file: String, directory: URL? = nil) throws -> Graph {
        try data.withUnsafeBytes { try importModel(bytes: $0, file: file, directory: directory) }
    }

    /// Imports model bytes, lifting raw_data fields of at least `liftingFrom` bytes
    /// (nil: none, every byte goes through SwiftProtobuf); `release` is told each
    /// lifted range once it is decoded.
    static func importModel(bytes: UnsafeRawBufferPointer, file: String, directory: URL?,
                            liftingFrom minimum: Int? = ONNXRawDataScan.defaultMinimumBytes,
                            release: ((Range<Int>) -> Void)? = nil) throws -> Graph {
        if bytes.isEmpty { throw ImportError.malformed(SourceLocation(file: file), reason: "file is empty") }
        let lifted = minimum.flatMap { ONNXRawDataScan.lift(bytes, minimumBytes: $0) }
        let model: Onnx_ModelProto
        do {
            var options = BinaryDecodingOptions()
            options.messageDepthLimit = 64
            if let lifted {
                model = try Onnx_ModelProto(serializedBytes: lifted.model, options: options)
            } else if let base = bytes.baseAddress {
                // A view of the caller's bytes, valid for this call (SwiftProtobuf copies what it keeps).
                let view = Data(bytesNoCopy: UnsafeMutableRawPointer(mutating: base), count: bytes.count, deallocator: .none)
                model = try Onnx_ModelProto(serializedBytes: view, options: options)
            } else {
                model = Onnx_ModelProto()
            }
        } catch {
            throw ImportError.malformed(SourceLocation(file: file), reason: "not an ONNX protobuf (\(error))")
        }
        guard model.hasGraph else {
            throw ImportError.malformed(SourceLocation(file: file), reason: "no graph (is this an ONNX model?)")
        }
        var declared: Int? = nil
        for o in model.opsetImport where o.domain.isEmpty || o.domain == "ai.onnx" { declared = Int(o.version) }
        if model.opsetImport.isEmpty { declared = 1 }
        // A model importing only other domains (ai.onnx.ml, …) has no default
        // opset; its nodes are reported as unsupported ops below.
        let opset = declared ?? supportedOpsets.upperBound
        guard supportedOpsets.contains(opset) else {
            throw ImportError.unsupported(SourceLocation(file: file, place: "opset_import"),
                                          what: "opset \(opset) (supported: \(supportedOpsets.lowerBound)–\(supportedOpsets.upperBound))")
        }
        var importer = GraphBuilder(file: file, opset: opset,
                                    tensors: ONNXTensorDecoder(file: file, modelDirectory: directory))
        if let lifted {
            importer.liftedInitializers = LiftedInitializers(bytes: bytes, ranges: lifted.payloads, release: release)
        }
        var graph = try importer.build(model.graph)
        graph.sourceFormat = "onnx"
        graph.sourceVersion = "ir \(model.irVersion), opset \(opset)"
        var meta = Metadata()
        meta.producerName = model.producerName
        meta.producerVersion = model.producerVersion
        meta.docString = model.docString
        meta.domain = model.domain
        meta.modelVersion = Int(clamping: model.modelVersion)
        for p in model.metadataProps {
            meta.properties.append((p.key, p.value))
            switch p.key.lowercased() {
            case "author": meta.author = p.value
            case "license": meta.license = p.value
            case "labels", "classes", "class_labels":
                // One per line (what we write); a single line is a comma-separated list.
                let multiline = p.value.contains("\n")
                meta.labels = p.value.split(whereSeparator: { multiline ? $0 == "\n" : $0 == "," }).map {
                    $0.trimmingCharacters(in: .whitespacesAndNewlines)
                }
            default: break
            }
        }
        graph.metadata = meta
        do {
            return try graph.checkedAgainstOpTable(file: file).validatedAndSorted()
        } catch let e as GraphError {
            throw ImportError.malformed(SourceLocation(file: file, place: "graph"), reason: e.description)
        }
    }
}

/// Translates one GraphProto, node by node, into a `Graph`.
struct GraphBuilder {
    let file: String
    let opset: Int
    let tensors: ONNXTensorDecoder
    var graph = Graph()
    /// Initializers stored as INT4 / UINT4 (decoded as int8 / uint8): their codes are 4-bit.
    var fourBitConstants = Set<String>()
    /// Where each DequantizeLinear came from (by output), for messages.
    var dequantizePlaces: [String: String] = [:]
    /// Names of values the importer introduces: `hint__swN` (one allocator for a graph and its subgraphs).
    var names = NameAllocator(.numbered(separator: "__sw"))
    /// Where this graph sits, for messages: "" for the main graph, else the owning node and attribute.
    var scope = ""
    /// The raw_data of the main graph's large initializers, lifted out before parsing (subgraphs have none).
    var liftedInitializers: LiftedInitializers?

    init(file: String, opset: Int, tensors: ONNXTensorDecoder) {
        self.file = file; self.opset = opset; self.tensors = tensors
    }

    func location(_ place: String) -> SourceLocation { SourceLocation(file: file, place: scope + place) }

    /// A fresh value name for values the importer introduces.
    mutating func freshName(_ hint: String) -> String { names.fresh(hint) }

    /// Adds a constant and returns its name.
    mutating func addConstant(_ t: Tensor, hint: String) -> String {
        let name = freshName(hint)
        graph.setConstant(Constant(name: name, tensor: t))
        return name
    }

    mutating func build(_ g: Onnx_GraphProto) throws -> Graph {
        // Every unsupported op, subgraphs included, is listed before anything is translated.
        var unsupported: [String] = []
        Self.collectUnsupported(g, into: &unsupported)
        if !unsupported.isEmpty { throw ImportError.unsupportedOps(file: file, ops: unsupported) }
        Self.reserveNames(g, in: &names)
        return try buildGraph(g)
    }

    /// Translates one graph (the main graph or a subgraph) whose ops are all supported.
    mutating func buildGraph(_ g: Onnx_GraphProto) throws -> Graph {
        graph.name = g.name
        if let s = g.sparseInitializer.first {
            throw ImportError.unsupported(location("sparse_initializer '\(s.values.name)'"), what: "sparse initializers")
        }
        for (i, t) in g.initializer.enumerated() {
            let place = "initializer[\(i)] '\(t.name)'"
            guard !t.name.isEmpty else { throw ImportError.malformed(location(place), reason: "initializer has no name") }
            let tensor: Tensor
            if let lifted = liftedInitializers, let range = lifted.ranges[i] {
                tensor = try tensors.decode(t, place: place, raw: UnsafeRawBufferPointer(rebasing: lifted.bytes[range]))
                lifted.release?(range)
            } else {
                tensor = try tensors.decode(t, place: place)
            }
            graph.setConstant(Constant(name: t.name, tensor: tensor))
            if t.dataType == Int32(Onnx_TensorProto.DataType.uint4.rawValue) || t.dataType == Int32(Onnx_TensorProto.DataType.int4.rawValue) {
                fourBitConstants.insert(t.name)
            }
        }
        graph.inputs = try g.input.enumerated().map { try valueInfo($1, place: "input[\($0)] '\($1.name)'") }
        graph.outputs = try g.output.enumerated().map { try valueInfo($1, place: "output[\($0)] '\($1.name)'") }
        for (i, v) in g.valueInfo.enumerated() {
            if let info = try? valueInfo(v, place: "value_info[\(i)]") { graph.valueInfo[v.name] = info }
        }
        for v in graph.inputs + graph.outputs { graph.valueInfo[v.name] = v }
        graph.metadata.docString = g.docString

        for (i, p) in g.node.enumerated() {
            let place = "node[\(i)] '\(p.name)' (\(p.opType))"
            let domain = p.domain == "ai.onnx" ? "" : p.domain
            guard domain.isEmpty, let translate = ONNXOps.translators[p.opType] else {
                throw ImportError.unsupportedOps(file: file, ops: [p.opType])  // collectUnsupported lists them first
            }
            let node = try self.node(p, place: place)
            try translate(&self, node, place)
        }
        try foldWeightDecoding()
        return graph
    }

    /// The NodeProto as an IR node with ONNX attributes converted.
    mutating func node(_ p: Onnx_NodeProto, place: String) throws -> Node {
        var attrs: [String: Attribute] = [:]
        for a in p.attribute {
            let aplace = "\(place) attribute '\(a.name)'"
            if !a.refAttrName.isEmpty { throw ImportError.unsupported(location(aplace), what: "attribute references (functions)") }
            let type = a.hasType ? a.type : inferredType(a)
            switch type {
            case .float: attrs[a.name] = .float(a.f)
            case .int: attrs[a.name] = .int(Int(clamping: a.i))
            case .string: attrs[a.name] = .string(String(decoding: a.s, as: UTF8.self))
            case .floats: attrs[a.name] = .floats(a.floats)
            case .ints: attrs[a.name] = .ints(a.ints.map { Int(clamping: $0) })
            case .strings: attrs[a.name] = .strings(a.strings.map { String(decoding: $0, as: UTF8.self) })
            case .tensor: attrs[a.name] = .tensor(try tensors.decode(a.t, place: aplace))
            case .graph: attrs[a.name] = .graph(try subgraph(a.g, place: aplace))
            case .graphs:
                throw ImportError.unsupported(location(aplace), what: "lists of subgraphs (\(p.opType))")
            default:
                throw ImportError.unsupported(location(aplace), what: "attribute type \(type)")
            }
        }
        return Node(name: p.name, opType: p.opType, inputs: p.input, outputs: p.output, attributes: attrs, docString: p.docString)
    }

    /// Old files may omit the attribute type; infer it from the set field.
    func inferredType(_ a: Onnx_AttributeProto) -> Onnx_AttributeProto.AttributeType {
        if a.hasG || !a.graphs.isEmpty { return .graph }
        if a.hasT { return .tensor }
        if !a.floats.isEmpty { return .floats }
        if !a.ints.isEmpty { return .ints }
        if !a.strings.isEmpty { return .strings }
        if a.hasS { return .string }
        if a.hasF { return .float }
        if a.hasI { return .int }
        return .undefined
    }

    func valueInfo(_ v: Onnx_ValueInfoProto, place: String) throws -> ValueInfo {
        // No type, or an empty TypeProto (subgraph outputs often have one): nothing is known.
        guard v.hasType, v.type.value != nil else { return ValueInfo(name: v.name, dtype: nil, shape: nil, docString: v.docString) }
        guard case .tensorType(let tt)? = v.type.value else {
            throw ImportError.unsupported(location(place), what: "non-tensor value (sequence, map or optional types)")
        }
        let dtype = tt.hasElemType ? DType(onnxDataType: Int(tt.elemType)) : nil
        if tt.hasElemType && dtype == nil && tt.elemType != 0 {
            throw ImportError.unsupported(location(place), what: "element type code \(tt.elemType)")
        }
        var dims: [Dim]?
        if tt.hasShape {
            dims = tt.shape.dim.map { d in
                switch d.value {
                case .dimValue(let v)?: return v >= 0 ? .fixed(Int(clamping: v)) : .unknown
                case .dimParam(let s)?: return s.isEmpty ? .unknown : .symbolic(s)
                case nil: return .unknown
                }
            }
        }
        return ValueInfo(name: v.name, dtype: dtype, shape: dims, docString: v.docString)
    }

    /// Appends a node to the graph.
    mutating func emit(_ n: Node) { graph.nodes.append(n) }
}

/// Lifted raw_data bytes (see `ONNXRawDataScan`) of the main graph's initializers, by index.
struct LiftedInitializers {
    let bytes: UnsafeRawBufferPointer
    let ranges: [Int: Range<Int>]
    let release: ((Range<Int>) -> Void)?
}

extension ONNXImporter {
    /// Decodes a serialized TensorProto (a `.pb` file of the ONNX test suites).
    public static func decodeTensor(data: Data, file: String) throws -> Tensor {
        let proto: Onnx_TensorProto
        do {
            proto = try Onnx_TensorProto(serializedBytes: data)
        } catch {
            throw ImportError.malformed(SourceLocation(file: file), reason: "not a TensorProto (\(error))")
        }
        let dir = URL(fileURLWithPath: file).deletingLastPathComponent()
        return try ONNXTensorDecoder(file: file, modelDirectory: dir).decode(proto, place: "tensor '\(proto.name)'")
    }
}
