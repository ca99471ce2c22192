import CoreMLSchema
import Foundation
import ShrinkwrapIR
import SwiftProtobuf

/// Flexible input shapes (`Metadata.flexibleShapes`: `--input-shape` ranges
/// or enumerated shapes) in an ML Program.
///
/// The program is written at the default shape and again at each of
/// `FlexibleShape.probeShapes`. When every op comes out the same apart from
/// the sizes in its value types, the program holds for every shape: the
/// sizes that differ between the writings are declared unknown in the
/// program, and the input's feature type gets the size ranges or the
/// enumerated shapes (as the NeuralNetwork exporter writes them). An op
/// whose parameters depend on the sizes (a reshape to a fixed shape, …) makes
/// the conversion fail, naming the op.
extension MILExporter {
    /// A package of an unprepared graph; `prepare` is the runtime's export
    /// preparation (fixed shapes, a shape for every value).
    public static func export(_ graph: Graph, options: Options, preparing prepare: (Graph) throws -> Graph) throws -> Package {
        var (model, weights, target) = try exportModel(try prepare(graph), options: options)
        for flexible in graph.metadata.flexibleShapes {
            try declare(flexible, in: &model, weights: weights, graph: graph, options: options, prepare: prepare)
        }
        return Package(model: try serialize(model), weights: weights, target: target)
    }

    static func declare(_ flexible: FlexibleShape, in model: inout CoreML_Specification_Model, weights: [UInt8], graph: Graph,
                        options: Options, prepare: (Graph) throws -> Graph) throws {
        let name = flexible.input
        let milName = MILProgramBuilder.sanitized(name)
        guard let k = graph.inputs.firstIndex(where: { $0.name == name }),
              let feature = model.description_p.input.firstIndex(where: { $0.name == milName }) else {
            throw ExportError.unsupported(format: format, what: "flexible shape of '\(name)': no such input")
        }
        let place = "input '\(name)' may take \(flexible.description)"
        var varyingOutputs = Set<String>()
        for probe in flexible.probeShapes {
            var other = graph
            other.inputs[k].shape = probe.map { .fixed($0) }
            let shape = "[" + probe.map(String.init).joined(separator: ", ") + "]"
            let written: CoreML_Specification_Model
            let otherWeights: [UInt8]
            do {
                (written, otherWeights, _) = try exportModel(prepare(other), options: options)
            } catch {
                throw ExportError.unsupported(format: format, what: "\(place), but at \(shape) the model cannot be written: \(error)")
            }
            guard otherWeights == weights else {
                throw ExportError.unsupported(format: format, what: "\(place), but its constants differ at \(shape) (they depend on the sizes that vary)")
            }
            if let op = try freeSizes(in: &model.mlProgram, comparedWith: written.mlProgram) {
                throw ExportError.unsupported(format: format, what: "\(place), but op '\(op)' is written differently at \(shape) than at the default shape "
                                              + "(its parameters depend on the sizes that vary); give one shape, or enumerated shapes that need the same ops")
            }
            for (a, b) in zip(model.description_p.output, written.description_p.output) where a != b { varyingOutputs.insert(a.name) }
        }
        try CoreMLExporter.declareInput(flexible, feature: &model.description_p.input[feature], place: place)
        for j in model.description_p.output.indices where varyingOutputs.contains(model.description_p.output[j].name) {
            if case .multiArrayType? = model.description_p.output[j].type.type { model.description_p.output[j].type.multiArrayType.shape = [] }
        }
    }

    /// Marks every size that differs between two writings of one program as
    /// unknown in `a`; returns the name of the first op that differs in
    /// anything else, or nil.
    static func freeSizes(in a: inout CoreML_Specification_MILSpec_Program, comparedWith b: CoreML_Specification_MILSpec_Program) throws -> String? {
        guard var fa = a.functions["main"], let fb = b.functions["main"], var ba = fa.blockSpecializations[fa.opset],
              let bb = fb.blockSpecializations[fb.opset], ba.operations.count == bb.operations.count, ba.outputs == bb.outputs else {
            return "the op count"
        }
        var options = BinaryEncodingOptions()
        options.useDeterministicOrdering = true
        for k in ba.operations.indices {
            var x = ba.operations[k], y = bb.operations[k]
            guard x.outputs.count == y.outputs.count else { return x.outputs.first?.name ?? x.type }
            for j in x.outputs.indices { freeDifferingSizes(&x.outputs[j].type, y.outputs[j].type) }
            // Everything but the sizes must be the same.
            var xs = x, ys = y
            for j in xs.outputs.indices { xs.outputs[j].type = MILValueType(); ys.outputs[j].type = MILValueType() }
            if try xs.serializedData(options: options) != ys.serializedData(options: options) { return x.outputs.first?.name ?? x.type }
            ba.operations[k] = x
        }
        for j in fa.inputs.indices where j < fb.inputs.count { freeDifferingSizes(&fa.inputs[j].type, fb.inputs[j].type) }
        fa.blockSpecializations[fa.opset] = ba
        a.functions["main"] = fa
        return nil
    }

    static func freeDifferingSizes(_ t: inout MILValueType, _ other: MILValueType) {
        guard case .tensorType(var x)? = t.type, case .tensorType(let y)? = other.type, x.dimensions.count == y.dimensions.count else { return }
        for d in x.dimensions.indices where x.dimensions[d] != y.dimensions[d] {
            var unknown = CoreML_Specification_MILSpec_Dimension()
            unknown.unknown = CoreML_Specification_MILSpec_Dimension.UnknownDimension()
            x.dimensions[d] = unknown
        }
        t.tensorType = x
    }
}
