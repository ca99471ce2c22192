import CoreMLSchema
import Foundation
import ShrinkwrapIR
import SwiftProtobuf

/// Writes a graph as a Core ML NeuralNetwork `.mlmodel`, weights kept in
/// their encoding (float32, float16, linear-quantized or lookup-table).
///
/// The graph must be prepared (`ExportPreparation.prepare` in the runtime):
/// fixed input shapes and a shape for every value. Two layouts:
///
/// - **rank-5 mapping** (specification 1–3, iOS 11–12): when every input,
///   output and intermediate value is `[1, C]` or `[1, C, H, W]` and every op
///   has a classic layer, values become Core ML's (C, H, W) blobs and the
///   inputs and outputs are declared without the batch axis, as the classic
///   converters wrote them. The version is then 1, 2 with float16 weights,
///   3 with quantized weights.
/// - **exact mapping** (specification 4, iOS 13) otherwise: shapes are
///   declared as they are and N-dimensional layers are used where needed.
///
/// An op without a layer is collected; the error lists all of them at once.
public enum CoreMLExporter {
    public static let format = "Core ML NeuralNetwork"

    /// IR ops the exporter can write (some only for certain attributes or
    /// shapes): its layer writers', and those its lowering passes rewrite.
    public static var supportedOps: [String] { Set(CoreMLLayerWriters.table.keys).union(CoreMLLowering.pipeline.loweredOps).sorted() }

    /// How compressed weights are stored in a written file (for the README's tables).
    public static let weightStorage = "every mode and width, in Core ML's own WeightParams: float16, linear (a scale per tensor or output channel) and lookup tables (one per weight); per-block scales and grouped palettes are refused"
    /// What WeightParams hold: fp16, linear codes of 1–8 bits with one scale per tensor or output
    /// channel (any offset), one lookup table per weight of 1–8 bits.
    public static let storedWeights = StoredWeightForms(
        float16: true, affineBits: Set(1...8), affineGranularities: [.perTensor, .perChannel], affineNeedsIntegerZeroPoint: false,
        paletteBits: Set(1...8), paletteGranularities: [.perTensor])

    /// Serialized `.mlmodel` bytes.
    public static func export(_ graph: Graph) throws -> Data {
        try serialize(try exportSpec(graph))
    }

    static func serialize(_ model: CoreML_Specification_Model) throws -> Data {
        do {
            // Map fields (the metadata's userDefined) in key order: Swift's dictionary order
            // changes from run to run, and the same inputs must give the same bytes.
            var options = BinaryEncodingOptions()
            options.useDeterministicOrdering = true
            return try model.serializedData(options: options)
        } catch {
            throw ExportError.unsupported(format: format, what: "cannot serialize the model: \(error)")
        }
    }

    /// The model message (for tests and `inspect`).
    static func exportSpec(_ source: Graph) throws -> CoreML_Specification_Model {
        let graph = try CoreMLLowering.pipeline.applied(to: source)
        if rank5Eligible(graph) {
            do {
                return try build(graph, rank5: true)
            } catch NeedsExactMapping.signal {
                // Some op has only an N-dimensional layer: fall through to exact mapping.
            }
        }
        return try build(graph, rank5: false)
    }

    /// Thrown by a layer writer in rank-5 mode when it needs an N-dimensional layer.
    enum NeedsExactMapping: Error { case signal }

    /// Every runtime input, output and value is [1, C] or [1, C, H, W].
    static func rank5Eligible(_ g: Graph) -> Bool {
        func ok(_ s: [Int]?) -> Bool {
            guard let s, s.first == 1 else { return false }
            return s.count == 2 || s.count == 4
        }
        guard g.runtimeInputs.allSatisfy({ ok($0.staticShape) }), g.outputs.allSatisfy({ ok($0.staticShape) }) else { return false }
        for n in g.nodes { for o in n.outputs where !o.isEmpty { guard ok(g.valueInfo[o]?.staticShape) else { return false } } }
        return true
    }

    static func build(_ graph: Graph, rank5: Bool) throws -> CoreML_Specification_Model {
        var w = NNWriter(graph: graph, rank5: rank5)
        try w.writeLayers()
        var model = CoreML_Specification_Model()
        model.description_p = try w.modelDescription()
        let updatable = !graph.metadata.updatableNodes.isEmpty
        if updatable { model.isUpdatable = true; w.require(4, "updatable layers") }
        if let bytes = graph.metadata.formatData("coreml.trainingInputs") {
            // The training inputs an updatable model declares (kept as read from a Core ML file).
            model.description_p.trainingInput = try CoreML_Specification_ModelDescription(serializedBytes: bytes).trainingInput
        }
        var preprocessing: [CoreML_Specification_NeuralNetworkPreprocessing] = []
        for p in w.preprocessing { preprocessing.append(p) }
        let updateParams = try graph.metadata.formatData("coreml.updateParams").map {
            try CoreML_Specification_NetworkUpdateParameters(serializedBytes: $0)
        }
        if let classifier = w.classifier {
            var nn = CoreML_Specification_NeuralNetworkClassifier()
            nn.layers = w.layers
            nn.preprocessing = preprocessing
            if !rank5 { nn.arrayInputShapeMapping = .exactArrayMapping; nn.imageInputShapeMapping = .rank4ImageMapping }
            var labels = CoreML_Specification_StringVector()
            labels.vector = classifier.labels
            nn.stringClassLabels = labels
            nn.labelProbabilityLayerName = classifier.probabilityBlob
            if let updateParams { nn.updateParams = updateParams }
            model.neuralNetworkClassifier = nn
        } else {
            var nn = CoreML_Specification_NeuralNetwork()
            nn.layers = w.layers
            nn.preprocessing = preprocessing
            if !rank5 { nn.arrayInputShapeMapping = .exactArrayMapping; nn.imageInputShapeMapping = .rank4ImageMapping }
            if let updateParams { nn.updateParams = updateParams }
            model.neuralNetwork = nn
        }
        if !rank5 { w.require(4, "N-dimensional shapes") }
        model.specificationVersion = Int32(w.version)
        return model
    }
}

/// Builds the layers and the description of one NeuralNetwork.
struct NNWriter {
    let graph: Graph
    /// Rank-5 mapping: values are (C, H, W) blobs; see `CoreMLExporter`.
    let rank5: Bool
    var layers: [CoreML_Specification_NeuralNetworkLayer] = []
    var preprocessing: [CoreML_Specification_NeuralNetworkPreprocessing] = []
    var classifier: (labels: [String], probabilityBlob: String)?
    /// The specification version the content needs so far, and why.
    private(set) var version = 1
    private(set) var versionReasons: [String] = []
    /// IR value → the blob that holds it (values of ops that write no layer).
    var alias: [String: String] = [:]
    var layerNames = NameAllocator()
    /// Blob names: layer outputs, runtime inputs, and every value and constant of the graph.
    var blobNames: NameAllocator
    /// Graph inputs consumed by folded preprocessing: value → blob the network reads.
    private var unsupported: [String] = []
    private let consumers: [String: Int]
    private let outputNames: Set<String>

    /// A loop body: its outputs are written back by the loop's copy layers, not named by layers here.
    let isLoopBody: Bool

    init(graph: Graph, rank5: Bool, isLoopBody: Bool = false) {
        self.graph = graph
        self.rank5 = rank5
        self.isLoopBody = isLoopBody
        blobNames = NameAllocator(taken: Array(graph.valueInfo.keys) + graph.constants.map(\.name))
        // Loop bodies' values are blobs of the same network: fresh names avoid them too.
        for n in graph.nodes { for (_, sub) in n.subgraphs { blobNames.reserve(sub.allNames) } }
        var c: [String: Int] = [:]
        for n in graph.nodes { for i in n.inputs where !i.isEmpty { c[i, default: 0] += 1 } }
        consumers = c
        outputNames = isLoopBody ? [] : Set(graph.outputs.map(\.name))
    }

    var format: String { CoreMLExporter.format }

    mutating func require(_ v: Int, _ why: String) {
        if v > version { version = v }
        if v > 1, !versionReasons.contains(why) { versionReasons.append(why) }
    }

    // MARK: layers

    mutating func writeLayers() throws {
        blobNames.reserve(graph.runtimeInputs.map(\.name))
        var skip = Set<Int>()
        try foldImagePreprocessing(skip: &skip)
        for (k, node) in graph.nodes.enumerated() where !skip.contains(k) {
            guard let writer = CoreMLLayerWriters.table[node.opType] else {
                unsupported.append("\(node.opType) (node '\(node.label)')")
                continue
            }
            // Every writer names its layer's output after the node's first output.
            guard node.outputs.first.map({ !$0.isEmpty }) == true else {
                unsupported.append("\(node.opType) (node '\(node.label)': no output)")
                continue
            }
            do {
                let before = layers.count
                try writer(&self, node)
                for l in layers[before...] { try checkPrecision(l) }
            } catch let e as LayerWriterError {
                unsupported.append("\(node.opType) (node '\(node.label)': \(e.reason))")
            }
        }
        if !unsupported.isEmpty { throw ExportError.unsupportedOps(format: format, ops: unsupported) }
        // Outputs must be written by a layer under their own name.
        for o in graph.outputs where !isLoopBody {
            let b = blob(o.name)
            if b != o.name || graph.isConstant(o.name) || graph.runtimeInputs.contains(where: { $0.name == o.name }) {
                if graph.isConstant(o.name) {
                    try emitConstant(o.name, as: o.name)
                } else {
                    var l = layer("identity_\(o.name)", inputs: [b], outputs: [o.name])
                    l.activation.linear.alpha = 1
                    add(l)
                }
            }
        }
    }

    /// Core ML rejects a layer whose float parameters mix float32 and float16
    /// (quantized weights beside a float32 bias are fine).
    func checkPrecision(_ l: CoreML_Specification_NeuralNetworkLayer) throws {
        var params: [CoreML_Specification_WeightParams] = []
        switch l.layer {
        case .convolution(let c)?: params = [c.weights] + (c.hasBias_p ? [c.bias] : [])
        case .innerProduct(let c)?: params = [c.weights] + (c.hasBias_p ? [c.bias] : [])
        case .batchnorm(let c)?: params = [c.gamma, c.beta, c.mean, c.variance]
        case .embeddingNd(let c)?: params = [c.weights] + (c.hasBias_p ? [c.bias] : [])
        case .layerNormalization(let c)?: params = [c.gamma, c.beta]
        case .uniDirectionalLstm(let c)?: params = CoreMLLayerWriters.lstmParams(c.weightParams)
        case .biDirectionalLstm(let c)?: params = c.weightParams.flatMap(CoreMLLayerWriters.lstmParams)
        case .gru(let c)?:
            params = [c.updateGateWeightMatrix, c.resetGateWeightMatrix, c.outputGateWeightMatrix,
                      c.updateGateRecursionMatrix, c.resetGateRecursionMatrix, c.outputGateRecursionMatrix]
                + (c.hasBiasVectors_p ? [c.updateGateBiasVector, c.resetGateBiasVector, c.outputGateBiasVector] : [])
        case .simpleRecurrent(let c)?: params = [c.weightMatrix, c.recursionMatrix] + (c.hasBiasVector_p ? [c.biasVector] : [])
        default: return
        }
        let half = params.contains { !$0.float16Value.isEmpty }
        let single = params.contains { !$0.floatValue.isEmpty }
        if half && single {
            throw ExportError.unsupported(format: format, what: "layer '\(l.name)' mixes float16 and float32 parameters, which Core ML rejects; compress its bias with fp16 too (the fp16 mode does this unless a plan rule keeps the bias float32)")
        }
    }

    /// The blob holding IR value `v`.
    func blob(_ v: String) -> String { alias[v] ?? v }

    /// Makes `v` another name of blob `of` (an op that writes no layer).
    mutating func setAlias(_ v: String, to of: String) { alias[v] = blob(of) }

    /// A fresh layer; names are made unique.
    mutating func layer(_ name: String, inputs: [String], outputs: [String]) -> CoreML_Specification_NeuralNetworkLayer {
        let base = layerNames.fresh(name.isEmpty ? "layer\(layers.count)" : name)
        var l = CoreML_Specification_NeuralNetworkLayer()
        l.name = base
        l.input = inputs
        l.output = outputs
        return l
    }

    mutating func add(_ l: CoreML_Specification_NeuralNetworkLayer) {
        blobNames.reserve(l.output)
        layers.append(l)
    }

    /// A blob name not used by any value or layer output.
    mutating func freshBlob(_ base: String) -> String { blobNames.fresh(base) }

    /// The static shape of a value (input, constant, or annotated intermediate).
    func shape(_ v: String) throws -> [Int] {
        if let c = graph.constant(named: v) { return c.encoding.shape }
        if let i = graph.inputs.first(where: { $0.name == v }), let s = i.staticShape { return s }
        if let s = graph.valueInfo[v]?.staticShape { return s }
        if let o = graph.outputs.first(where: { $0.name == v }), let s = o.staticShape { return s }
        throw ExportError.unsupported(format: format, what: "value '\(v)' has no known shape (prepare the graph for export first)")
    }

    /// An input blob for a node: runtime values by name; constants become a load-constant layer.
    mutating func inputBlob(_ v: String) throws -> String {
        if graph.isConstant(v), alias[v] == nil {
            let b = freshBlob(v)
            try emitConstant(v, as: b)
            alias[v] = b
        }
        return blob(v)
    }

    /// Writes constant `name` as a layer producing `output`.
    mutating func emitConstant(_ name: String, as output: String) throws {
        guard let c = graph.constant(named: name) else { return }
        let s = c.encoding.shape
        if rank5 {
            guard let chw = blobShape(s) else { throw NeedsExactMappingOrFail() }
            var l = layer("const_\(name)", inputs: [], outputs: [output])
            l.loadConstant.shape = chw.map { UInt64($0) }
            l.loadConstant.data = try weights(name)
            add(l)
        } else {
            require(4, "N-dimensional layers")
            var l = layer("const_\(name)", inputs: [], outputs: [output])
            l.loadConstantNd.shape = (s.isEmpty ? [1] : s).map { UInt64($0) }
            l.loadConstantNd.data = try weights(name)
            add(l)
        }
    }

    /// In rank-5 mode: the (C, H, W) blob of an IR shape [1, C] or [1, C, H, W].
    func blobShape(_ s: [Int]) -> [Int]? {
        if s.count == 2, s[0] == 1 { return [s[1], 1, 1] }
        if s.count == 4, s[0] == 1 { return [s[1], s[2], s[3]] }
        if s.count == 1 { return [s[0], 1, 1] }
        if s.isEmpty { return [1, 1, 1] }
        return nil
    }

    /// Rank-5 mode cannot express this: try exact mapping (or fail when already there).
    func NeedsExactMappingOrFail() -> Error {
        rank5 ? CoreMLExporter.NeedsExactMapping.signal : LayerWriterError("no layer for this shape")
    }

    /// Marks a layer as needing N-dimensional semantics.
    mutating func needND(_ what: String) throws {
        if rank5 { throw CoreMLExporter.NeedsExactMapping.signal }
        require(4, what)
    }

    /// WeightParams for constant `name`, optionally transposed, reshaped and cut to `rows` of axis 0 first;
    /// per-channel scales must lie along `channelAxis` of the result.
    mutating func weights(_ name: String, transpose perm: [Int]? = nil, reshape: [Int]? = nil,
                          rows: Range<Int>? = nil, channelAxis: Int = 0) throws -> CoreML_Specification_WeightParams {
        guard let c = graph.constant(named: name) else {
            throw LayerWriterError("'\(name)' is not a constant")
        }
        return try params(c.encoding, name: name, channelAxis: channelAxis) { e throws(WeightLayoutError) in
            var e = e
            if let perm { e = try e.transposed(perm) }
            if let reshape { e = try e.reshaped(reshape) }
            if let rows { e = try e.rows(rows) }
            return e
        }
    }

    /// WeightParams for (a transformed view of) the encoding of constant `name`.
    mutating func params(_ encoding: WeightEncoding, name: String, channelAxis: Int = 0,
                         _ transform: (WeightEncoding) throws(WeightLayoutError) -> WeightEncoding = { $0 }) throws
        -> CoreML_Specification_WeightParams {
        var e: WeightEncoding
        do throws(WeightLayoutError) {
            e = try transform(encoding)
        } catch {
            throw ExportError.unsupportedWeight(format: format, tensor: name, reason: error.reason)
        }
        if case .dense(let t) = e, t.dtype != .float32 {
            // Integer constants (indices, shapes) are stored as float, as Core ML does.
            e = .dense(Tensor(t.doubles.map { Float($0) }, shape: t.shape))
        }
        switch e {
        case .float16: require(2, "float16 weights")
        case .affine, .palette: require(3, "quantized weights")
        case .dense: break
        }
        var p = try CoreMLWeights.params(e, name: name, axis: channelAxis)
        if graph.metadata.updatableNodes.isEmpty == false, isUpdatableWeight(name) {
            guard case .dense = e else {
                throw ExportError.unsupportedWeight(format: format, tensor: name,
                                                    reason: "belongs to an updatable layer, which Core ML trains in float32; leave it uncompressed")
            }
            p.isUpdatable = true
        }
        return p
    }

    /// Dense float values of a small constant (attributes stored as tensors: shapes, scalars).
    func values(_ name: String) throws -> [Float] {
        guard let c = graph.constant(named: name) else { throw LayerWriterError("'\(name)' must be a constant") }
        return c.encoding.decoded().doubles.map { Float($0) }
    }

    /// Integer values of a small constant (starts, ends, axes, pads), clamped
    /// to ±2⁶² (ONNX writes INT64_MAX for "to the end"; Float cannot hold it
    /// and Int(Float) would trap).
    func intValues(_ name: String) throws -> [Int] {
        guard let c = graph.constant(named: name) else { throw LayerWriterError("'\(name)' must be a constant") }
        let t = c.encoding.decoded()
        if let ints = t.ints { return ints.map { Int(max(min($0, 1 << 62), -(1 << 62))) } }
        return try t.doubles.map { d -> Int in
            guard d.isFinite else { throw LayerWriterError("'\(name)' holds \(d), not an integer") }
            return Int(max(min(d, 4.6e18), -4.6e18))
        }
    }

    func isUpdatableWeight(_ name: String) -> Bool {
        let nodes = Set(graph.metadata.updatableNodes)
        return graph.nodes.contains { nodes.contains($0.name) && $0.inputs.contains(name) }
    }

    /// Marks the layer updatable when its node is.
    func markUpdatable(_ l: inout CoreML_Specification_NeuralNetworkLayer, _ node: Node) {
        if graph.metadata.updatableNodes.contains(node.name) { l.isUpdatable = true }
    }

    func consumerCount(_ v: String) -> Int { consumers[v, default: 0] }
    func isGraphOutput(_ v: String) -> Bool { outputNames.contains(v) }

    // MARK: image inputs

    /// For each image input: `x → Mul(scalar) → Add([C] or scalar)` (either
    /// optional) right after the input becomes the Core ML image scaler.
    mutating func foldImagePreprocessing(skip: inout Set<Int>) throws {
        for image in graph.metadata.imageInputs {
            guard let info = graph.runtimeInputs.first(where: { $0.name == image.name }) else {
                throw ExportError.unsupported(format: format, what: "image input '\(image.name)' is not an input of the graph")
            }
            guard let s = info.staticShape, s.count == 4, s[0] == 1, s[1] == image.color.channels else {
                throw ExportError.unsupported(format: format,
                                              what: "image input '\(image.name)' must be [1, \(image.color.channels), H, W] for \(image.color.rawValue); it is \(info.shapeDescription)")
            }
            var scaler = CoreML_Specification_NeuralNetworkImageScaler()
            scaler.channelScale = 1
            var current = image.name
            var bias = [Float](repeating: 0, count: image.color.channels)
            func soleConsumer(_ v: String) -> (Int, Node)? {
                let users = graph.nodes.enumerated().filter { $0.element.inputs.contains(v) }
                guard users.count == 1, !outputNames.contains(v) else { return nil }
                return (users[0].offset, users[0].element)
            }
            func constOperand(_ n: Node, _ v: String) -> [Float]? {
                guard n.inputs.count == 2, let other = n.inputs.first(where: { $0 != v }), graph.isConstant(other),
                      let t = graph.constant(named: other)?.encoding.decoded() else { return nil }
                return t.doubles.map { Float($0) }
            }
            if let (k, n) = soleConsumer(current), n.opType == "Mul", let c = constOperand(n, current), c.count == 1 {
                scaler.channelScale = c[0]
                skip.insert(k)
                current = n.outputs[0]
            }
            if let (k, n) = soleConsumer(current), n.opType == "Add", let c = constOperand(n, current),
               c.count == 1 || (c.count == image.color.channels
                                && (try? shape(n.inputs.first { $0 != current } ?? "")).map({ $0.filter { $0 != 1 } == [image.color.channels] && ($0.count < 3 || $0[$0.count - 3] == image.color.channels) }) == true) {
                bias = c.count == 1 ? Array(repeating: c[0], count: image.color.channels) : c
                skip.insert(k)
                current = n.outputs[0]
            }
            switch image.color {
            case .gray: scaler.grayBias = bias[0]
            case .rgb: scaler.redBias = bias[0]; scaler.greenBias = bias[1]; scaler.blueBias = bias[2]
            case .bgr: scaler.blueBias = bias[0]; scaler.greenBias = bias[1]; scaler.redBias = bias[2]
            }
            if current != image.name { alias[current] = image.name }
            var p = CoreML_Specification_NeuralNetworkPreprocessing()
            p.featureName = image.name
            p.scaler = scaler
            preprocessing.append(p)
        }
    }

    // MARK: description

    mutating func modelDescription() throws -> CoreML_Specification_ModelDescription {
        var d = CoreML_Specification_ModelDescription()
        let images = Dictionary(graph.metadata.imageInputs.map { ($0.name, $0.color) }, uniquingKeysWith: { a, _ in a })
        for i in graph.runtimeInputs {
            var f = CoreML_Specification_FeatureDescription()
            f.name = i.name
            f.shortDescription = i.docString
            if let color = images[i.name], let s = i.staticShape, s.count == 4 {
                var t = CoreML_Specification_ImageFeatureType()
                t.height = Int64(s[2]); t.width = Int64(s[3])
                t.colorSpace = color == .gray ? .grayscale : color == .rgb ? .rgb : .bgr
                f.type.imageType = t
            } else {
                f.type.multiArrayType = try arrayType(i.name, i.dtype)
            }
            d.input.append(f)
        }
        let labels = graph.metadata.labels
        var probabilityOutput: String?
        if !labels.isEmpty {
            let candidates = try graph.outputs.filter { o in
                let s = try shape(o.name)
                return s.filter { $0 != 1 } == [labels.count]
            }
            if graph.outputs.count == 1, candidates.count == 1 { probabilityOutput = candidates[0].name }
        }
        for o in graph.outputs {
            var f = CoreML_Specification_FeatureDescription()
            f.name = o.name
            f.shortDescription = o.docString
            if o.name == probabilityOutput {
                var dict = CoreML_Specification_DictionaryFeatureType()
                dict.stringKeyType = CoreML_Specification_StringFeatureType()
                f.type.dictionaryType = dict
            } else {
                f.type.multiArrayType = try arrayType(o.name, o.dtype)
            }
            d.output.append(f)
        }
        if let p = probabilityOutput {
            let labelName = graph.outputs.contains { $0.name == "classLabel" } || graph.runtimeInputs.contains { $0.name == "classLabel" }
                ? "classLabel_" : "classLabel"
            var f = CoreML_Specification_FeatureDescription()
            f.name = labelName
            f.shortDescription = "Most likely class label"
            f.type.stringType = CoreML_Specification_StringFeatureType()
            d.output.insert(f, at: 0)
            d.predictedFeatureName = labelName
            d.predictedProbabilitiesName = p
            classifier = (labels, p)
        }
        d.metadata = CoreMLExporter.metadata(graph.metadata)
        return d
    }

    func arrayType(_ name: String, _ dtype: DType?) throws -> CoreML_Specification_ArrayFeatureType {
        var a = CoreML_Specification_ArrayFeatureType()
        let s = try shape(name)
        if rank5 {
            // Declared without the batch axis: [C] for [1, C], [C, H, W] for [1, C, H, W].
            a.shape = s.dropFirst().map { Int64($0) }
        } else {
            a.shape = (s.isEmpty ? [1] : s).map { Int64($0) }
        }
        switch dtype {
        case .int32?, .int64?, .int8?, .int16?, .uint8?, .uint16?, .uint32?, .uint64?: a.dataType = .int32
        case .float64?: a.dataType = .double
        default: a.dataType = .float32
        }
        return a
    }
}

extension CoreMLExporter {
    /// The model's metadata as both Core ML formats write it: description,
    /// author, license, version, and the remaining properties (labels aside)
    /// as user-defined entries, with the producer.
    static func metadata(_ m: Metadata) -> CoreML_Specification_Metadata {
        var md = CoreML_Specification_Metadata()
        md.shortDescription = m.docString
        md.author = m.author
        md.license = m.license
        if m.modelVersion != 0 { md.versionString = String(m.modelVersion) }
        for (k, v) in m.properties {
            let key = k.lowercased()
            if key == "author" || key == "license" || ["labels", "classes", "class_labels"].contains(key) { continue }
            md.userDefined[k] = v
        }
        if !m.producerName.isEmpty, md.userDefined["producer"] == nil {
            md.userDefined["producer"] = m.producerVersion.isEmpty ? m.producerName : "\(m.producerName) \(m.producerVersion)"
        }
        return md
    }
}

/// A node a layer writer cannot express, with the reason (collected, then reported together).
struct LayerWriterError: Error {
    let reason: String
    init(_ reason: String) { self.reason = reason }
}
