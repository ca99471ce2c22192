import Foundation
import ONNXSchema
import SwiftProtobuf

/// Builds small ONNX models in tests.
enum ONNXTestModels {
    static func tensor(_ name: String, dims: [Int64], floats: [Float]) -> Onnx_TensorProto {
        var t = Onnx_TensorProto()
        t.name = name
        t.dims = dims
        t.dataType = 1
        t.floatData = floats
        return t
    }

    static func rawTensor(_ name: String, dims: [Int64], raw: Data, type: Int32 = 1) -> Onnx_TensorProto {
        var t = Onnx_TensorProto()
        t.name = name
        t.dims = dims
        t.dataType = type
        t.rawData = raw
        return t
    }

    static func valueInfo(_ name: String, dims: [Int64], type: Int32 = 1) -> Onnx_ValueInfoProto {
        var v = Onnx_ValueInfoProto()
        v.name = name
        var tt = Onnx_TypeProto.Tensor()
        tt.elemType = type
        var shape = Onnx_TensorShapeProto()
        shape.dim = dims.map { d in var x = Onnx_TensorShapeProto.Dimension(); x.dimValue = d; return x }
        tt.shape = shape
        v.type.tensorType = tt
        return v
    }

    static func node(_ op: String, _ inputs: [String], _ outputs: [String], name: String = "",
                     attributes: [Onnx_AttributeProto] = []) -> Onnx_NodeProto {
        var n = Onnx_NodeProto()
        n.opType = op
        n.input = inputs
        n.output = outputs
        n.name = name.isEmpty ? "\(op)_\(outputs.first ?? "")" : name
        n.attribute = attributes
        return n
    }

    static func intAttr(_ name: String, _ v: Int64) -> Onnx_AttributeProto {
        var a = Onnx_AttributeProto(); a.name = name; a.type = .int; a.i = v; return a
    }

    static func intsAttr(_ name: String, _ v: [Int64]) -> Onnx_AttributeProto {
        var a = Onnx_AttributeProto(); a.name = name; a.type = .ints; a.ints = v; return a
    }

    static func model(nodes: [Onnx_NodeProto], inputs: [Onnx_ValueInfoProto], outputs: [Onnx_ValueInfoProto],
                      initializers: [Onnx_TensorProto] = [], opset: Int64 = 17) -> Onnx_ModelProto {
        var g = Onnx_GraphProto()
        g.name = "test"
        g.node = nodes
        g.input = inputs
        g.output = outputs
        g.initializer = initializers
        var m = Onnx_ModelProto()
        m.irVersion = 8
        m.producerName = "shrinkwrap-tests"
        var o = Onnx_OperatorSetIdProto()
        o.version = opset
        m.opsetImport = [o]
        m.graph = g
        return m
    }

    /// Writes a model into a fresh temporary folder and returns its URL.
    static func write(_ m: Onnx_ModelProto, name: String = "model.onnx", in dir: URL? = nil) throws -> URL {
        let folder = dir ?? FileManager.default.temporaryDirectory.appendingPathComponent("sw-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let url = folder.appendingPathComponent(name)
        try m.serializedData().write(to: url)
        return url
    }

    /// y = Relu(x · W + b) with W 2×3.
    static func tinyMLP() -> Onnx_ModelProto {
        model(nodes: [node("MatMul", ["x", "W"], ["xw"]), node("Add", ["xw", "b"], ["z"]), node("Relu", ["z"], ["y"])],
              inputs: [valueInfo("x", dims: [1, 2])], outputs: [valueInfo("y", dims: [1, 3])],
              initializers: [tensor("W", dims: [2, 3], floats: [1, -1, 2, 0.5, 1, -2]), tensor("b", dims: [3], floats: [0, 0.5, 1])])
    }
}
