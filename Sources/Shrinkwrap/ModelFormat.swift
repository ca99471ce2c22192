import Foundation
import ShrinkwrapIR
import ShrinkwrapCoreML
import ShrinkwrapKeras
import ShrinkwrapONNX
import ShrinkwrapTFLite
import ShrinkwrapTensorFlow
import ShrinkwrapRuntime

/// A model file format Shrinkwrap reads and writes.
public struct ModelFormat: Sendable {
    /// Short name, e.g. "onnx".
    public let name: String
    /// The format's full name, e.g. "Core ML NeuralNetwork".
    public let title: String
    /// File extensions, lowercase, without the dot.
    public let extensions: [String]
    /// Imports a file of this format, with the options it reads (`importOptions`).
    public let importer: @Sendable (URL, ImportOptions) throws -> Graph
    /// The `ImportOptions` the importer reads (others are refused by `Models.load`).
    public var importOptions: [ImportOptions.Key] = []
    /// Ops (in the format's own vocabulary) the importer accepts.
    public let supportedOps: [String]
    /// Serializes a graph to this format (nil for a format without an exporter).
    public let exporter: (@Sendable (Graph, ExportOptions) throws -> ExportedModel)?
    /// The `ExportOptions` the exporter reads (others are refused before exporting).
    public var exportOptions: [ExportOptions.Key] = []
    /// IR ops the exporter can write.
    public let exportedOps: [String]
    /// How the exporter stores compressed weights, in one line.
    public let weightStorage: String
    /// Which compressed weights the exporter stores (checked before compressing).
    public let storedWeights: StoredWeightForms
    /// Whether the exporter needs every input dimension but the batch fixed.
    public let needsFixedShapes: Bool
    /// How the format keeps `--input-shape` ranges and enumerated shapes
    /// (`Metadata.flexibleShapes`); nil: it keeps one shape per input.
    public let flexibleShapes: String?
    /// What the format calls the things `supportedOps` lists ("ops", "layer types", …).
    public var vocabulary = "ops"

    /// What the exporter stores under given options (a deployment target),
    /// when that differs from `storedWeights`; nil: `storedWeights`.
    public var storedWeightsUnder: (@Sendable (ExportOptions) -> StoredWeightForms?)? = nil

    /// What the exporter stores under `options`.
    public func storedWeights(_ options: ExportOptions) -> StoredWeightForms { storedWeightsUnder?(options) ?? storedWeights }

    /// The file extension written: the first.
    public var mainExtension: String { extensions.first ?? name }
}

/// A serialized model, with what its bytes are made of when the exporter says.
public struct ExportedModel: Sendable {
    /// The file's bytes (a single-file format).
    public var data: Data
    /// The files of a package folder, relative to it (a folder format such as
    /// `.mlpackage`); empty for a single file.
    public var files: [(path: String, data: Data)] = []
    /// "N bytes = W compressed weight bytes + G graph bytes (…)", when known.
    public var sizeSummary: String?
    public init(data: Data, sizeSummary: String? = nil) {
        self.data = data; self.sizeSummary = sizeSummary
    }
    public init(files: [(path: String, data: Data)], sizeSummary: String? = nil) {
        self.data = Data(); self.files = files; self.sizeSummary = sizeSummary
    }

    /// Bytes written, every file of a package included.
    public var byteCount: Int { files.isEmpty ? data.count : files.reduce(0) { $0 + $1.data.count } }
}

/// Options some exporters read; a format lists the ones it takes
/// (`ModelFormat.exportOptions`), and setting another is refused.
public struct ExportOptions: Sendable, Equatable {
    public enum Key: String, Sendable, CaseIterable {
        case target, precision
    }
    /// Deployment target (`.mlpackage`: iOS15 … iOS18; default the lowest that holds the model).
    public var target: String?
    /// Compute precision (`.mlpackage`: float32 or float16).
    public var precision: String?
    public init(target: String? = nil, precision: String? = nil) { self.target = target; self.precision = precision }

    /// The options set, for checking them against a format.
    public var setKeys: [Key] { Key.allCases.filter { ($0 == .target ? target : precision) != nil } }

    /// Only the options `format` takes (for one of several outputs).
    public func applicable(to format: ModelFormat) -> ExportOptions {
        ExportOptions(target: format.exportOptions.contains(.target) ? target : nil,
                      precision: format.exportOptions.contains(.precision) ? precision : nil)
    }
}

/// The format registry: one line per format.
public enum ModelFormats {
    public static let all: [ModelFormat] = [
        ModelFormat(name: "onnx", title: "ONNX", extensions: ["onnx"], importer: { url, _ in try ONNXImporter.importModel(at: url) },
                    supportedOps: ONNXImporter.supportedOps,
                    exporter: { g, _ in
                        let (data, layout) = try ONNXExporter.exportWithLayout(ModelFormats.typingOutputs(ModelFormats.freeingFlexibleDims(g)))
                        return ExportedModel(data: data, sizeSummary: layout.summary)
                    },
                    exportedOps: ONNXExporter.supportedOps.filter { OpTable[$0] != nil },  // IR ops (import-only forms like Upsample are not)
                    weightStorage: ONNXExporter.weightStorage, storedWeights: ONNXExporter.storedWeights, needsFixedShapes: false,
                    flexibleShapes: "the dims that vary are written free"),
        ModelFormat(name: "coreml", title: CoreMLExporter.format, extensions: ["mlmodel"], importer: { url, _ in try CoreMLImporter.importModel(at: url) },
                    supportedOps: CoreMLImporter.supportedLayers,
                    exporter: { g, _ in ExportedModel(data: try CoreMLExporter.export(g, preparing: { try ExportPreparation.prepare($0, format: CoreMLExporter.format, keepingLoops: true).graph })) },
                    exportedOps: CoreMLExporter.supportedOps, weightStorage: CoreMLExporter.weightStorage,
                    storedWeights: CoreMLExporter.storedWeights, needsFixedShapes: true,
                    flexibleShapes: "size ranges or enumerated shapes, when no layer depends on the sizes that vary", vocabulary: "layer types"),
        ModelFormat(name: "tflite", title: TFLiteExporter.format, extensions: ["tflite"], importer: { url, _ in try TFLiteImporter.importModel(at: url) },
                    supportedOps: TFLiteImporter.supportedOps,
                    exporter: { g, _ in ExportedModel(data: try TFLiteExporter.export(try ExportPreparation.prepare(g, format: TFLiteExporter.format, keepingLoops: true).graph)) },
                    exportedOps: TFLiteExporter.supportedOps, weightStorage: TFLiteExporter.weightStorage,
                    storedWeights: TFLiteExporter.storedWeights, needsFixedShapes: true, flexibleShapes: nil, vocabulary: "builtin ops"),
        ModelFormat(name: "mlpackage", title: MILExporter.format, extensions: ["mlpackage"], importer: { url, _ in try MILImporter.importPackage(at: url) },
                    supportedOps: MILImporter.supportedOps,
                    exporter: { g, o in try ModelFormats.exportPackage(g, o) },
                    exportOptions: [.target, .precision],
                    exportedOps: MILExporter.supportedOps, weightStorage: MILExporter.weightStorage,
                    storedWeights: MILExporter.storedWeights, needsFixedShapes: true,
                    flexibleShapes: "size ranges or enumerated shapes, when no op depends on the sizes that vary",
                    storedWeightsUnder: { o in o.target.flatMap(MILExporter.Target.init(named:)).map(MILExporter.storedWeights(for:)) }),
        // Read only: Keras 2 .h5 (model_config + model_weights) and Keras 3 .keras.
        ModelFormat(name: "keras", title: "Keras", extensions: ["h5", "keras", "hdf5"], importer: { url, _ in try KerasImporter.importModel(at: url) },
                    supportedOps: KerasImporter.supportedLayers, exporter: nil, exportedOps: [], weightStorage: "(read only)",
                    storedWeights: .everything, needsFixedShapes: false, flexibleShapes: nil, vocabulary: "layer classes"),
        // Read only: a frozen GraphDef (.pb) or a SavedModel folder (ModelBundle sends folders holding saved_model.pb here).
        ModelFormat(name: "tensorflow", title: "TensorFlow", extensions: ["pb"], importer: { url, o in
                        try TensorFlowImporter.importModel(at: url, inputs: o.inputs, outputs: o.outputs, signature: o.signature ?? "serving_default",
                                                           evaluate: ShapeDerivedValues.evaluate)
                    }, importOptions: [.inputs, .outputs, .signature],
                    supportedOps: TensorFlowImporter.supportedOps, exporter: nil, exportedOps: [], weightStorage: "(read only)",
                    storedWeights: .everything, needsFixedShapes: false, flexibleShapes: nil, vocabulary: "ops"),
    ]

    /// The deployment targets an ML Program is written for ("iOS15" …).
    public static var mlProgramTargets: [String] { MILExporter.Target.allCases.map(\.description) }

    /// An ML Program package: `--target`, `--precision` read here.
    static func exportPackage(_ g: Graph, _ o: ExportOptions) throws -> ExportedModel {
        var options = MILExporter.Options()
        if let t = o.target {
            guard let target = MILExporter.Target(named: t) else {
                throw ExportError.unsupported(format: MILExporter.format, what: "--target \(t): expected one of \(MILExporter.Target.allCases.map(\.description).joined(separator: ", "))")
            }
            options.target = target
        }
        if let p = o.precision {
            guard let precision = MILExporter.Precision(rawValue: p) else {
                throw ExportError.unsupported(format: MILExporter.format, what: "--precision \(p): expected float32 or float16")
            }
            options.precision = precision
        }
        let package = try MILExporter.export(g, options: options, preparing: { try ExportPreparation.prepare($0, format: MILExporter.format, keepingLoops: true).graph })
        let weights = package.weights.count
        return ExportedModel(files: package.files,
                             sizeSummary: "ML Program for \(package.target) (\(options.precision.rawValue)): model \(package.model.count) bytes + weight.bin \(weights) bytes")
    }

    /// The inputs pinned with ranges or enumerated shapes get their varying
    /// dims back free (named as in the source, else "NAME_dK"): the ONNX file
    /// takes every size, as the source did.
    static func freeingFlexibleDims(_ g: Graph) -> Graph {
        guard !g.metadata.flexibleShapes.isEmpty else { return g }
        var out = g
        for flex in g.metadata.flexibleShapes {
            guard let k = out.inputs.firstIndex(where: { $0.name == flex.input }), var shape = out.inputs[k].shape else { continue }
            for axis in flex.varyingAxes where axis < shape.count {
                let original = flex.original.flatMap { axis < $0.count ? $0[axis] : nil }
                if case .symbolic(let name)? = original { shape[axis] = .symbolic(name) } else { shape[axis] = .symbolic("\(flex.input)_d\(axis)") }
            }
            out.inputs[k].shape = shape
        }
        out.metadata.flexibleShapes = []
        return out
    }

    /// ONNX needs a type and a rank for every graph output; an imported graph
    /// may not know them (a Core ML output without a shape). They come from one
    /// run of the shape annotation, the dimensions left free.
    static func typingOutputs(_ g: Graph) -> Graph {
        guard g.outputs.contains(where: { $0.dtype == nil || $0.shape == nil }),
              let prepared = try? ExportPreparation.prepare(g, keepingLoops: true).graph else { return g }
        var out = g
        for k in out.outputs.indices where out.outputs[k].dtype == nil || out.outputs[k].shape == nil {
            guard let p = prepared.outputs.first(where: { $0.name == out.outputs[k].name }) else { continue }
            if out.outputs[k].dtype == nil { out.outputs[k].dtype = p.dtype }
            if out.outputs[k].shape == nil, let shape = p.shape { out.outputs[k].shape = shape.map { _ in .unknown } }
        }
        return out
    }

    /// The format for a path, by extension.
    public static func format(for url: URL) -> ModelFormat? {
        let ext = url.pathExtension.lowercased()
        return all.first { $0.extensions.contains(ext) }
    }
}

extension ModelFormats {
    /// The formats with an exporter.
    public static var writable: [ModelFormat] { all.filter { $0.exporter != nil } }

    /// Every extension read (".onnx, .mlmodel, .tflite"), for help texts.
    public static var readableExtensions: String { all.flatMap(\.extensions).map { "." + $0 }.joined(separator: ", ") }

    /// Every extension written, for help texts.
    public static var writableExtensions: String { writable.map { "." + $0.mainExtension }.joined(separator: ", ") }

    /// The format that writes extension `ext` (with or without the dot).
    public static func writer(forExtension ext: String) -> ModelFormat? {
        let e = ext.hasPrefix(".") ? String(ext.dropFirst()) : ext
        return writable.first { $0.extensions.contains(e.lowercased()) }
    }
}
