import CoreMLSchema
import Foundation
import ShrinkwrapIR
import SwiftProtobuf

/// Flexible input shapes (`Metadata.flexibleShapes`: `--input-shape` ranges
/// or enumerated shapes), written as Core ML's size ranges / enumerated
/// shapes (specification 3, iOS 12).
///
/// The layers are written at the default shape, and a NeuralNetwork has one
/// set of layers for every shape it takes, so the flexibility is declared
/// only when the layers do not depend on the sizes that vary: the model is
/// written again at each of `FlexibleShape.probeShapes` and must come out
/// with the same layers; otherwise the conversion is refused, naming the
/// first layer that differs.
extension CoreMLExporter {
    /// Serialized `.mlmodel` bytes of an unprepared graph; `prepare` is the
    /// runtime's export preparation (fixed shapes, a shape for every value).
    public static func export(_ graph: Graph, preparing prepare: (Graph) throws -> Graph) throws -> Data {
        var model = try exportSpec(prepare(graph))
        for flexible in graph.metadata.flexibleShapes {
            try declare(flexible, in: &model, graph: graph, prepare: prepare)
        }
        return try serialize(model)
    }

    static func declare(_ flexible: FlexibleShape, in model: inout CoreML_Specification_Model, graph: Graph,
                        prepare: (Graph) throws -> Graph) throws {
        let name = flexible.input
        guard let k = graph.inputs.firstIndex(where: { $0.name == name }),
              let feature = model.description_p.input.firstIndex(where: { $0.name == name }) else {
            throw ExportError.unsupported(format: format, what: "flexible shape of '\(name)': no such input")
        }
        let place = "input '\(name)' may take \(flexible.description)"
        var varyingOutputs = Set<String>()
        for probe in flexible.probeShapes {
            var other = graph
            other.inputs[k].shape = probe.map { .fixed($0) }
            let shape = "[" + probe.map(String.init).joined(separator: ", ") + "]"
            let written: CoreML_Specification_Model
            do {
                written = try exportSpec(prepare(other))
            } catch {
                throw ExportError.unsupported(format: format, what: "\(place), but at \(shape) the model cannot be written: \(error)")
            }
            if let layer = try firstDifferentLayer(model, written) {
                throw ExportError.unsupported(format: format, what: "\(place), but layer '\(layer)' is written differently at \(shape) than at the default shape "
                                              + "(its parameters depend on the sizes that vary); give one shape, or enumerated shapes that need the same layers")
            }
            for (a, b) in zip(model.description_p.output, written.description_p.output) where a != b { varyingOutputs.insert(a.name) }
        }
        try declareInput(flexible, feature: &model.description_p.input[feature], place: place)
        // Outputs whose shape follows the input's: declared without a shape.
        for j in model.description_p.output.indices where varyingOutputs.contains(model.description_p.output[j].name) {
            if case .multiArrayType? = model.description_p.output[j].type.type { model.description_p.output[j].type.multiArrayType.shape = [] }
        }
        model.specificationVersion = max(model.specificationVersion, 3)
    }

    /// Writes the sizes into the input's feature type (a multi-array, or an
    /// image whose height and width vary).
    static func declareInput(_ flexible: FlexibleShape, feature: inout CoreML_Specification_FeatureDescription, place: String) throws {
        let rank = flexible.defaultShape.count
        switch feature.type.type {
        case .multiArrayType(var a)?:
            // The rank-5 mapping declares arrays without the batch axis.
            let skip = rank - a.shape.count
            guard skip == 0 || skip == 1, !flexible.varyingAxes.contains(where: { $0 < skip }) else {
                throw ExportError.unsupported(format: format, what: "\(place), but the file declares it without the batch axis, which cannot vary")
            }
            switch flexible.sizes {
            case .ranges(let ranges):
                var r = CoreML_Specification_ArrayFeatureType.ShapeRange()
                r.sizeRanges = ranges.dropFirst(skip).map(sizeRange)
                a.shapeRange = r
            case .enumerated(let shapes):
                var e = CoreML_Specification_ArrayFeatureType.EnumeratedShapes()
                e.shapes = shapes.map { s in
                    var one = CoreML_Specification_ArrayFeatureType.Shape()
                    one.shape = s.dropFirst(skip).map { Int64($0) }
                    return one
                }
                a.enumeratedShapes = e
            }
            feature.type.multiArrayType = a
        case .imageType(var image)?:
            guard rank == 4, flexible.varyingAxes.allSatisfy({ $0 >= 2 }) else {
                throw ExportError.unsupported(format: format, what: "\(place), but it is an image input: only its height and width can vary")
            }
            switch flexible.sizes {
            case .ranges(let ranges):
                var r = CoreML_Specification_ImageFeatureType.ImageSizeRange()
                r.heightRange = sizeRange(ranges[2])
                r.widthRange = sizeRange(ranges[3])
                image.imageSizeRange = r
            case .enumerated(let shapes):
                var e = CoreML_Specification_ImageFeatureType.EnumeratedImageSizes()
                e.sizes = shapes.map { s in
                    var size = CoreML_Specification_ImageFeatureType.ImageSize()
                    size.height = UInt64(s[2]); size.width = UInt64(s[3])
                    return size
                }
                image.enumeratedSizes = e
            }
            feature.type.imageType = image
        default:
            throw ExportError.unsupported(format: format, what: "\(place), but it is neither a multi-array nor an image input")
        }
    }

    static func sizeRange(_ r: FlexibleShape.SizeRange) -> CoreML_Specification_SizeRange {
        var out = CoreML_Specification_SizeRange()
        out.lowerBound = UInt64(r.lower)
        out.upperBound = r.upper.map { Int64($0) } ?? -1
        return out
    }

    /// The name of the first layer that differs between two writings of one
    /// model ("the layer count" when they have different numbers), or nil.
    static func firstDifferentLayer(_ a: CoreML_Specification_Model, _ b: CoreML_Specification_Model) throws -> String? {
        let (la, lb) = (layers(of: a), layers(of: b))
        var options = BinaryEncodingOptions()
        options.useDeterministicOrdering = true
        for (x, y) in zip(la, lb) where try x.serializedData(options: options) != y.serializedData(options: options) {
            return x.name
        }
        return la.count == lb.count ? nil : "the layer count (\(la.count) vs \(lb.count))"
    }

    static func layers(of model: CoreML_Specification_Model) -> [CoreML_Specification_NeuralNetworkLayer] {
        switch model.type {
        case .neuralNetwork(let nn)?: return nn.layers
        case .neuralNetworkClassifier(let nn)?: return nn.layers
        case .neuralNetworkRegressor(let nn)?: return nn.layers
        default: return []
        }
    }
}
