import CoreMLSchema
import Foundation
import ShrinkwrapIR
import SwiftProtobuf

/// Reads a Core ML NeuralNetwork `.mlmodel` (plain network, classifier or
/// regressor, or a pipeline of those) into the IR.
///
/// Values keep their Core ML blob names. With exact array mapping the IR
/// shapes are the declared ones; with the rank-5 mapping of specification
/// 1–3 every blob (Seq = 1, Batch = 1, C, H, W) becomes an IR value
/// [1, C, H, W], and inputs and outputs are declared [1] + their Core ML
/// shape ([1, C] for a vector, [1, C, H, W] for an image-like array). Image
/// inputs become [1, C, H, W] float inputs of raw pixel values followed by
/// the preprocessing as ordinary nodes. Weights keep their encoding.
public enum CoreMLImporter {
    public static let format = "Core ML NeuralNetwork"

    /// Layer kinds the importer reads.
    public static var supportedLayers: [String] { CoreMLLayerReaders.table.keys.sorted() }

    public static func importModel(at url: URL) throws -> Graph {
        let data: Data
        do {
            data = try Data(contentsOf: url, options: .mappedIfSafe)
        } catch {
            throw ImportError.unreadable(file: url.path, reason: (error as NSError).localizedDescription)
        }
        return try importModel(data: data, file: url.path)
    }

    public static func importModel(data: Data, file: String) throws -> Graph {
        if data.isEmpty { throw ImportError.malformed(SourceLocation(file: file), reason: "file is empty") }
        let model: CoreML_Specification_Model
        do {
            var options = BinaryDecodingOptions()
            options.messageDepthLimit = 64
            model = try CoreML_Specification_Model(serializedBytes: data, options: options)
        } catch {
            throw ImportError.malformed(SourceLocation(file: file), reason: "not a Core ML protobuf (\(error))")
        }
        if case .mlProgram? = model.type {
            // An ML Program: its blob files are named relative to the model file's folder.
            return try MILImporter.importProgram(model, modelFile: URL(fileURLWithPath: file), package: nil)
        }
        guard model.hasDescription_p else {
            throw ImportError.malformed(SourceLocation(file: file), reason: "no model description (is this an .mlmodel?)")
        }
        var reader = ModelReader(file: file)
        var graph = try reader.read(model)
        graph.sourceFormat = "coreml"
        graph.sourceVersion = "specification \(model.specificationVersion)"
        do {
            return try graph.checkedAgainstOpTable(file: file).validatedAndSorted()
        } catch let e as GraphError {
            throw ImportError.malformed(SourceLocation(file: file, place: "neural network"), reason: e.description)
        }
    }
}

/// Model-level reading: description, model kind, pipelines, metadata.
struct ModelReader {
    let file: String
    var builder: GraphBuilderState

    init(file: String) {
        self.file = file
        builder = GraphBuilderState(file: file)
    }

    func loc(_ place: String) -> SourceLocation { SourceLocation(file: file, place: place) }

    mutating func read(_ model: CoreML_Specification_Model) throws -> Graph {
        let d = model.description_p
        var graph = Graph(name: "", metadata: Self.readMetadata(d))
        let flexible = try readInputs(d, into: &graph)
        if !d.trainingInput.isEmpty {
            var t = CoreML_Specification_ModelDescription()
            t.trainingInput = d.trainingInput
            if let bytes = try? t.serializedBytes() as [UInt8] { graph.metadata.formatData.append(("coreml.trainingInputs", bytes)) }
        }
        builder.begin(graph: graph)
        try readNetwork(model, place: "model")
        makeFlexibleAxesSymbolic(flexible)
        graph = builder.graph
        graph.metadata = builder.graph.metadata
        try readOutputs(model)
        graph = builder.graph
        if graph.outputs.isEmpty { throw ImportError.malformed(loc("description.output"), reason: "the model has no tensor output") }
        return graph
    }

    /// The model's metadata: description, author, license, version and user-defined entries.
    static func readMetadata(_ d: CoreML_Specification_ModelDescription) -> Metadata {
        var meta = Metadata()
        meta.docString = d.metadata.shortDescription
        meta.author = d.metadata.author
        meta.license = d.metadata.license
        if let v = Int(d.metadata.versionString) { meta.modelVersion = v } else if !d.metadata.versionString.isEmpty {
            meta.properties.append(("version", d.metadata.versionString))
        }
        for k in d.metadata.userDefined.keys.sorted() {
            let v = d.metadata.userDefined[k] ?? ""
            if k == "producer" { meta.producerName = v; continue }
            meta.properties.append((k, v))
        }
        return meta
    }

    /// The declared inputs (multi-arrays and images) into `graph`; returns each input's flexible axes.
    func readInputs(_ d: CoreML_Specification_ModelDescription, into graph: inout Graph) throws -> [String: [Int]] {
        var flexible: [String: [Int]] = [:]
        for (k, f) in d.input.enumerated() {
            let place = "description.input[\(k)] '\(f.name)'"
            switch f.type.type {
            case .multiArrayType(let a)?:
                let dims = a.shape.map { Int($0) }
                guard dims.allSatisfy({ $0 > 0 }), checkedElementCount(dims, limit: 1 << 31) != nil else {
                    throw ImportError.malformed(loc(place), reason: "shape \(a.shape) has a non-positive or too large dimension")
                }
                let dtype: DType = a.dataType == .int32 ? .int32 : .float32
                graph.inputs.append(ValueInfo(name: f.name, dtype: dtype, shape: dims.map { .fixed($0) }, docString: f.shortDescription))
                if let free = Self.flexibleAxes(a), !free.isEmpty { flexible[f.name] = free }
            case .imageType(let i)?:
                let color: ColorLayout
                switch i.colorSpace {
                case .grayscale: color = .gray
                case .rgb: color = .rgb
                case .bgr: color = .bgr
                default: throw ImportError.unsupported(loc(place), what: "image color space \(i.colorSpace)")
                }
                guard i.width > 0, i.height > 0, i.width <= 1 << 15, i.height <= 1 << 15 else {
                    throw ImportError.malformed(loc(place), reason: "image size \(i.width)×\(i.height)")
                }
                graph.inputs.append(ValueInfo(name: f.name, dtype: .float32,
                                              shape: [.fixed(1), .fixed(color.channels), .fixed(Int(i.height)), .fixed(Int(i.width))],
                                              docString: f.shortDescription))
                graph.metadata.imageInputs.append(ImageInput(name: f.name, color: color))
            default:
                throw ImportError.unsupported(loc(place), what: "input type (only multi-arrays and images feed a neural network)")
            }
        }
        return flexible
    }

    mutating func makeFlexibleAxesSymbolic(_ flexible: [String: [Int]]) {
        // Flexible sizes (a RangeDim / EnumeratedShapes batch from coremltools) become symbolic
        // dimensions; with the old rank-5 mapping the layers see fixed blobs, so the default shape stays.
        if !builder.rank5 {
            for (k, i) in builder.graph.inputs.enumerated() {
                guard let free = flexible[i.name], var dims = i.shape else { continue }
                for axis in free where axis < dims.count { dims[axis] = .symbolic(axis == 0 ? "batch" : "\(i.name)_d\(axis)") }
                builder.graph.inputs[k].shape = dims
            }
        }
    }

    /// The declared outputs: multi-arrays, a classifier's probabilities (and its labels); the class label is derived.
    mutating func readOutputs(_ model: CoreML_Specification_Model) throws {
        let d = model.description_p
        var labels: [String] = []
        var probabilityBlob = ""
        switch model.type {
        case .neuralNetworkClassifier(let c)?:
            switch c.classLabels {
            case .stringClassLabels(let s)?: labels = s.vector
            case .int64ClassLabels(let s)?: labels = s.vector.map { String($0) }
            case nil: break
            }
            probabilityBlob = c.labelProbabilityLayerName
        case .pipelineClassifier?:
            break
        default: break
        }
        builder.graph.metadata.labels = labels
        for (k, f) in d.output.enumerated() {
            let place = "description.output[\(k)] '\(f.name)'"
            switch f.type.type {
            case .multiArrayType(let a)?:
                let declared = a.shape.map { Int($0) }
                let value = try builder.output(f.name, declared: declared, place: place)
                // The declared shape, in IR terms, when it agrees with the value's rank (for inspect;
                // exporters re-derive shapes by running the graph).
                var shape: [Dim]? = nil
                let irShape = builder.rank5 ? [1] + declared : declared
                if !declared.isEmpty, declared.allSatisfy({ $0 > 0 }), builder.ranks[value] == irShape.count {
                    shape = irShape.map { .fixed($0) }
                }
                builder.graph.outputs.append(ValueInfo(name: value, dtype: a.dataType == .int32 ? nil : .float32, shape: shape,
                                                       docString: f.shortDescription))
            case .dictionaryType?:
                // A classifier's probabilities: the tensor the probability blob holds, named as the output.
                let blob = probabilityBlob.isEmpty ? builder.lastBlob : probabilityBlob
                guard !blob.isEmpty else { throw ImportError.malformed(loc(place), reason: "no probability blob") }
                let value = try builder.probabilities(f.name, blob: blob, classes: labels.count, place: place)
                builder.graph.outputs.append(ValueInfo(name: value, dtype: .float32, shape: nil, docString: f.shortDescription))
            case .stringType?, .int64Type?:
                if f.name == d.predictedFeatureName { continue }  // the class label: derived from the probabilities
                throw ImportError.unsupported(loc(place), what: "a string or integer output that is not the predicted class label")
            default:
                throw ImportError.unsupported(loc(place), what: "output type")
            }
        }
    }

    /// The axes of a multi-array input whose size may vary: a size range
    /// that is not one value, or enumerated shapes that differ there. Nil
    /// when the flexibility does not match the default shape's rank.
    static func flexibleAxes(_ a: CoreML_Specification_ArrayFeatureType) -> [Int]? {
        switch a.shapeFlexibility {
        case .shapeRange(let r)?:
            guard r.sizeRanges.count == a.shape.count else { return nil }
            return r.sizeRanges.indices.filter { k in
                let range = r.sizeRanges[k]
                return range.upperBound < 0 || UInt64(range.upperBound) != range.lowerBound
            }
        case .enumeratedShapes(let e)?:
            let shapes = e.shapes.map(\.shape) + [a.shape]
            guard shapes.allSatisfy({ $0.count == a.shape.count }) else { return nil }
            return a.shape.indices.filter { k in shapes.contains { $0[k] != a.shape[k] } }
        case nil:
            return nil
        }
    }

    /// The network (or the networks of a pipeline, in order).
    mutating func readNetwork(_ model: CoreML_Specification_Model, place: String) throws {
        switch model.type {
        case .neuralNetwork(let nn)?:
            try builder.network(layers: nn.layers, preprocessing: nn.preprocessing, exact: nn.arrayInputShapeMapping == .exactArrayMapping,
                                rank4Images: nn.imageInputShapeMapping == .rank4ImageMapping, place: place)
            if nn.hasUpdateParams { try keepUpdateParams(nn.updateParams) }
        case .neuralNetworkClassifier(let nn)?:
            try builder.network(layers: nn.layers, preprocessing: nn.preprocessing, exact: nn.arrayInputShapeMapping == .exactArrayMapping,
                                rank4Images: nn.imageInputShapeMapping == .rank4ImageMapping, place: place)
            if nn.hasUpdateParams { try keepUpdateParams(nn.updateParams) }
        case .neuralNetworkRegressor(let nn)?:
            try builder.network(layers: nn.layers, preprocessing: nn.preprocessing, exact: nn.arrayInputShapeMapping == .exactArrayMapping,
                                rank4Images: nn.imageInputShapeMapping == .rank4ImageMapping, place: place)
            if nn.hasUpdateParams { try keepUpdateParams(nn.updateParams) }
        case .pipeline(let p)?:
            try readPipeline(p, place: place)
        case .pipelineClassifier(let p)?:
            try readPipeline(p.pipeline, place: place)
        case .pipelineRegressor(let p)?:
            try readPipeline(p.pipeline, place: place)
        case .mlProgram?:
            // An ML Program parses (MIL.proto) but is not translated into the graph yet.
            throw ImportError.unsupported(loc(place), what: "Core ML ML Program (MIL): not read yet; NeuralNetwork models and pipelines of them are")
        case nil:
            throw ImportError.unsupported(loc(place), what: "model type (Shrinkwrap reads neural networks and pipelines of them)")
        }
    }

    mutating func readPipeline(_ p: CoreML_Specification_Pipeline, place: String) throws {
        guard !p.models.isEmpty else { throw ImportError.malformed(loc(place), reason: "empty pipeline") }
        for (k, m) in p.models.enumerated() {
            let name = k < p.names.count ? " '\(p.names[k])'" : ""
            try readNetwork(m, place: "\(place).pipeline.models[\(k)]\(name)")
        }
    }

    mutating func keepUpdateParams(_ u: CoreML_Specification_NetworkUpdateParameters) throws {
        if let bytes = try? u.serializedBytes() as [UInt8] {
            builder.graph.metadata.formatData.append(("coreml.updateParams", bytes))
        }
    }
}
