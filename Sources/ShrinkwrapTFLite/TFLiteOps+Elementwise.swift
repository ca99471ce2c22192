import FlatBuffers
import ShrinkwrapIR

/// Dense and element-wise translators: FULLY_CONNECTED, BATCH_MATMUL, activations, arithmetic.
extension TFLiteOps {
    static func fullyConnected(_ c: inout TFLiteContext, _ op: TFLiteModel.Op) throws {
        try arity(c, op, 2)
        let o = try c.options(op, "FullyConnectedOptions")
        let act: Int8 = try c.option(o, 0, Int8(0), op)
        let format: Int8 = try c.option(o, 1, Int8(0), op)
        let keep: Bool = try c.option(o, 2, false, op)
        guard format == 0 else { throw ImportError.unsupported(c.loc(op), what: "shuffled fully-connected weights (weights_format \(format))") }
        let wShape = c.constantEncoding(op.inputs[1])?.shape ?? c.shape(op.inputs[1])
        guard wShape.count == 2 else { throw ImportError.malformed(c.loc(op), reason: "weights shape \(wShape) is not [units, depth]") }
        let (units, depth) = (wShape[0], wShape[1])
        let xs = c.shape(op.inputs[0])
        var x = c.value(op.inputs[0])
        if xs.count != 2 || xs.last != depth {
            let flat = c.fresh(x + "_2d")
            c.emit("Reshape", [x, c.int64Constant("fc_shape", [-1, depth])], [flat])
            x = flat
        }
        let out = c.value(op.outputs[0])
        let outShape = c.shape(op.outputs[0])
        let needsReshape = keep && xs.count != 2 && !xs.isEmpty
        let gemmOut = needsReshape || act != 0 ? c.fresh(out + "_gemm") : out
        // A weight read at run time is not transposed at import: Gemm's transB reads it as stored.
        c.emit("Gemm", [x, c.value(op.inputs[1]), optionalInput(c, op, 2)], [gemmOut], ["transB": .int(1)], name: out)
        var y = gemmOut
        if needsReshape {
            let r = act != 0 ? c.fresh(out + "_nd") : out
            let target = outShape.count == xs.count ? outShape : Array(xs.dropLast()) + [units]
            c.emit("Reshape", [y, c.int64Constant("fc_out_shape", target.enumerated().map { $0.offset == 0 ? -1 : $0.element })], [r])
            y = r
        }
        if act != 0 { try c.activation(act, y, out, op: op) }
    }

    static func binary(_ c: inout TFLiteContext, _ op: TFLiteModel.Op, _ onnx: String, options: String?) throws {
        try arity(c, op, 2)
        var act: Int8 = 0
        if let options {
            let o = try c.options(op, options)
            act = try c.option(o, 0, Int8(0), op)
        }
        let a = c.value(op.inputs[0]), b = c.value(op.inputs[1])
        try c.withActivation(act, output: c.value(op.outputs[0]), op: op) { c, y in c.emit(onnx, [a, b], [y]) }
    }

    static func unary(_ c: inout TFLiteContext, _ op: TFLiteModel.Op, _ onnx: String) throws {
        try arity(c, op, 1)
        let attrs: [String: Attribute] = onnx == "LogSoftmax" ? ["axis": .int(-1)] : [:]
        c.emit(onnx, [c.value(op.inputs[0])], [c.value(op.outputs[0])], attrs)
    }

    static func clip(_ c: inout TFLiteContext, _ op: TFLiteModel.Op, _ lo: Float, _ hi: Float) throws {
        try arity(c, op, 1)
        c.emit("Clip", [c.value(op.inputs[0]), c.floatConstant("clip_min", lo), c.floatConstant("clip_max", hi)], [c.value(op.outputs[0])])
    }

    static func leakyRelu(_ c: inout TFLiteContext, _ op: TFLiteModel.Op) throws {
        try arity(c, op, 1)
        let alpha: Float = try c.option(try c.options(op, "LeakyReluOptions"), 0, Float(0), op)
        c.emit("LeakyRelu", [c.value(op.inputs[0])], [c.value(op.outputs[0])], ["alpha": .float(alpha)])
    }

    static func softmax(_ c: inout TFLiteContext, _ op: TFLiteModel.Op) throws {
        try arity(c, op, 1)
        let beta: Float = try c.option(try c.options(op, "SoftmaxOptions"), 0, Float(0), op)
        var x = c.value(op.inputs[0])
        if beta != 1 {
            let scaled = c.fresh(x + "_beta")
            c.emit("Mul", [x, c.floatConstant("softmax_beta", beta)], [scaled])
            x = scaled
        }
        c.emit("Softmax", [x], [c.value(op.outputs[0])], ["axis": .int(-1)])
    }

    static func squaredDifference(_ c: inout TFLiteContext, _ op: TFLiteModel.Op) throws {
        try arity(c, op, 2)
        let d = c.fresh(c.value(op.outputs[0]) + "_diff")
        c.emit("Sub", [c.value(op.inputs[0]), c.value(op.inputs[1])], [d])
        c.emit("Mul", [d, d], [c.value(op.outputs[0])])
    }

    static func rsqrt(_ c: inout TFLiteContext, _ op: TFLiteModel.Op) throws {
        try arity(c, op, 1)
        let s = c.fresh(c.value(op.outputs[0]) + "_sqrt")
        c.emit("Sqrt", [c.value(op.inputs[0])], [s])
        c.emit("Reciprocal", [s], [c.value(op.outputs[0])])
    }

    static func batchMatMul(_ c: inout TFLiteContext, _ op: TFLiteModel.Op) throws {
        try arity(c, op, 2)
        let o = try c.options(op, "BatchMatMulOptions")
        let adj = [try c.option(o, 0, false, op), try c.option(o, 1, false, op)]
        var ins: [String] = []
        for k in 0..<2 {
            var v = c.value(op.inputs[k])
            if adj[k] {
                let r = c.shape(op.inputs[k]).count
                guard r >= 2 else { throw ImportError.malformed(c.loc(op), reason: "adjoint of a rank-\(r) input") }
                let t = c.fresh(v + "_adj")
                c.emit("Transpose", [v], [t], ["perm": .ints(Array(0..<(r - 2)) + [r - 1, r - 2])])
                v = t
            }
            ins.append(v)
        }
        c.emit("MatMul", ins, [c.value(op.outputs[0])])
    }
}
