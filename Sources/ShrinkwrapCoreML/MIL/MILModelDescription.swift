import CoreMLSchema
import Foundation
import ShrinkwrapIR

/// The Model message's description of an ML Program: inputs (multiarrays,
/// or images for the graph's image inputs), outputs, metadata, and for a
/// model with labels and one probability output, a classifier: the program
/// ends in `classify`, whose outputs are the predicted label and the
/// label → probability dictionary, as coremltools writes classifiers.
extension MILWriter {
    /// The single output a classifier reads probabilities from, when the
    /// graph has labels and one output of that many classes.
    func probabilityOutput() -> String? {
        let labels = graph.metadata.labels
        guard !labels.isEmpty, graph.outputs.count == 1, let s = try? shape(graph.outputs[0].name),
              s.filter({ $0 != 1 }) == [labels.count] else { return nil }
        return graph.outputs[0].name
    }

    /// Adds `classify` after the probabilities; returns the two outputs' names.
    mutating func writeClassifier(probabilities: String) throws -> (label: String, probs: String) {
        var p = try value(probabilities)
        if builder.types[p]?.dataType == .float16 { p = cast(p, to: .float32, base: p + "_to_fp32") }
        let labelName = graph.runtimeInputs.contains { $0.name == "classLabel" } ? "classLabel_" : "classLabel"
        let label = builder.fresh(labelName)
        let probs = builder.fresh(label + "_probs")
        var classes = MILValue()
        var list = CoreML_Specification_MILSpec_ListType()
        list.type = MILTensorType(dataType: .string, shape: []).proto
        var length = CoreML_Specification_MILSpec_Dimension()
        var c = CoreML_Specification_MILSpec_Dimension.ConstantDimension()
        c.size = UInt64(graph.metadata.labels.count)
        length.constant = c
        list.length = length
        classes.type.listType = list
        var values = CoreML_Specification_MILSpec_ListValue()
        values.values = graph.metadata.labels.map(MILProgramBuilder.stringValue)
        classes.immediateValue.list = values
        var dict = CoreML_Specification_MILSpec_DictionaryType()
        dict.keyType = MILTensorType(dataType: .string, shape: []).proto
        dict.valueType = MILTensorType(dataType: .float64, shape: []).proto
        var dictType = MILValueType()
        dictType.dictionaryType = dict
        builder.classify(probabilities: p, classes: classes, label: label, probs: probs, dictType: dictType)
        return (label, probs)
    }

    func modelDescription() throws -> CoreML_Specification_ModelDescription {
        var d = CoreML_Specification_ModelDescription()
        let images = Dictionary(graph.metadata.imageInputs.map { ($0.name, $0.color) }, uniquingKeysWith: { a, _ in a })
        for (i, declared) in zip(graph.runtimeInputs, inputs) {
            var f = CoreML_Specification_FeatureDescription()
            f.name = declared.name
            f.shortDescription = i.docString
            let t = try declaredType(i.name, i.dtype)
            if let color = images[i.name], t.shape.count == 4, t.shape[0] == 1, t.shape[1] == color.channels {
                var im = CoreML_Specification_ImageFeatureType()
                im.height = Int64(t.shape[2]); im.width = Int64(t.shape[3])
                im.colorSpace = color == .gray ? .grayscale : color == .rgb ? .rgb : .bgr
                f.type.imageType = im
            } else {
                f.type.multiArrayType = Self.arrayType(t)
            }
            d.input.append(f)
        }
        if let classifier {
            var label = CoreML_Specification_FeatureDescription()
            label.name = classifier.label
            label.shortDescription = "Most likely class label"
            label.type.stringType = CoreML_Specification_StringFeatureType()
            var probs = CoreML_Specification_FeatureDescription()
            probs.name = classifier.probs
            probs.shortDescription = "Probability of each class label"
            var dict = CoreML_Specification_DictionaryFeatureType()
            dict.stringKeyType = CoreML_Specification_StringFeatureType()
            probs.type.dictionaryType = dict
            d.output = [label, probs]
            d.predictedFeatureName = classifier.label
            d.predictedProbabilitiesName = classifier.probs
        } else {
            for (o, name) in zip(graph.outputs, outputs) {
                var f = CoreML_Specification_FeatureDescription()
                f.name = name
                f.shortDescription = o.docString
                var t = try type(of: name)
                if t.dataType == .float16 { t.dataType = .float32 }
                f.type.multiArrayType = Self.arrayType(t)
                d.output.append(f)
            }
        }
        d.metadata = CoreMLExporter.metadata(graph.metadata)
        // Names MIL could not keep (it takes [A-Za-z_][A-Za-z0-9_]*), so that reading the package back
        // gives the source's names: JSON {"MIL name": "original name"}.
        var renamed: [String: String] = [:]
        for (i, declared) in zip(graph.runtimeInputs, inputs) where i.name != declared.name { renamed[declared.name] = i.name }
        if let classifier {
            // The probabilities read back as a tensor under the dictionary's name.
            if let p = probabilityOutput(), p != classifier.probs { renamed[classifier.probs] = p }
        } else {
            for (o, name) in zip(graph.outputs, outputs) where o.name != name { renamed[name] = o.name }
        }
        if !renamed.isEmpty, let json = try? JSONSerialization.data(withJSONObject: renamed, options: [.sortedKeys]),
           let text = String(data: json, encoding: .utf8) {
            d.metadata.userDefined[MILExporter.originalNamesKey] = text
        }
        return d
    }

    static func arrayType(_ t: MILTensorType) -> CoreML_Specification_ArrayFeatureType {
        var a = CoreML_Specification_ArrayFeatureType()
        a.shape = (t.shape.isEmpty ? [1] : t.shape).map { Int64($0) }
        switch t.dataType {
        case .int32, .int8, .uint8, .bool: a.dataType = .int32
        case .float16: a.dataType = .float16
        default: a.dataType = .float32
        }
        return a
    }
}

extension MILProgramBuilder {
    /// `classify(probabilities, classes)` → (label, label → probability).
    mutating func classify(probabilities: String, classes: MILValue, label: String, probs: String, dictType: MILValueType) {
        var o = MILOperation()
        o.type = "classify"
        var pa = CoreML_Specification_MILSpec_Argument()
        var pb = CoreML_Specification_MILSpec_Argument.Binding()
        pb.name = probabilities
        pa.arguments = [pb]
        o.inputs["probabilities"] = pa
        var ca = CoreML_Specification_MILSpec_Argument()
        var cb = CoreML_Specification_MILSpec_Argument.Binding()
        cb.value = classes
        ca.arguments = [cb]
        o.inputs["classes"] = ca
        var l = CoreML_Specification_MILSpec_NamedValueType()
        l.name = label
        l.type = MILTensorType(dataType: .string, shape: []).proto
        var p = CoreML_Specification_MILSpec_NamedValueType()
        p.name = probs
        p.type = dictType
        o.outputs = [l, p]
        o.attributes["name"] = Self.stringValue(fresh("classify"))
        appendRaw(o)
    }
}
