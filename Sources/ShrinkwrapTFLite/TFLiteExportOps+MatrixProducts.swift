import FlatBuffers
import ShrinkwrapIR

/// Matrix product writers: Gemm and MatMul as FULLY_CONNECTED or BATCH_MATMUL.
extension TFLiteExportOps {
    static func fullyConnected(_ e: inout TFLiteEmitter, input: Int, weight: Int, bias: Int?, output: Int, keepDims: Bool, activation act: Int8) throws {
        try e.op("FULLY_CONNECTED", [input, weight, bias ?? -1], [output], options: "FullyConnectedOptions") { b in
            b.table { t in t.add(0, act, default: 0); t.add(2, keepDims, default: false) }
        }
    }

    static func gemm(_ e: inout TFLiteEmitter, _ n: Node) throws {
        let a = try arity(n, 0), bName = try arity(n, 1)
        guard n.int("transA", 0) == 0 else { throw TFLiteOpError("transA = 1") }
        let transB = n.int("transB", 0) != 0
        let alpha = n.float("alpha", 1), beta = n.float("beta", 1)
        guard alpha == 1 else { throw TFLiteOpError("alpha \(alpha)") }
        let ys = try e.shape(n.outputs.first ?? "")
        guard ys.count == 2 else { throw TFLiteOpError("output rank \(ys.count)") }
        let nOut = ys[1]
        let y = try e.output(n)
        var bias: Int?
        var addAfter: String?
        if let c = n.input(2), beta != 0 {
            if beta == 1, let ce = e.g.constants[e.resolve(c)], ce.count == nOut, ce.shape.filter({ $0 != 1 }).count <= 1 {
                let r = try ce.reshaped([nOut])
                bias = try e.constantTensor(e.resolve(c) + (ce.shape == [nOut] ? "" : "_vector"), r, hybrid: nil)
            } else if beta == 1 {
                addAfter = c
            } else {
                throw TFLiteOpError("beta \(beta) with a bias that is not a constant vector")
            }
        }
        guard addAfter == nil || activation(n) == 0 else { throw TFLiteOpError("a fused activation after a bias that is not a vector") }
        let out = addAfter == nil ? y : try e.temp(n.outputs[0] + "_product", shape: ys)
        if e.g.isConstant(e.resolve(bName)) {
            let w = try e.weight(bName, perm: transB ? nil : [1, 0], hybrid: .init(axis: 0, perChannel: false))
            try fullyConnected(&e, input: try e.input(a), weight: w, bias: bias, output: out, keepDims: false, activation: activation(n))
        } else {
            let product = bias == nil ? out : try e.temp(n.outputs[0] + "_matmul", shape: ys)
            try e.op("BATCH_MATMUL", [try e.input(a), try e.input(bName)], [product], options: "BatchMatMulOptions") { b in
                b.table { t in t.add(1, transB, default: false) }
            }
            if let bias { try e.op("ADD", [product, bias], [out], options: "AddOptions") }
        }
        if let c = addAfter { try e.op("ADD", [out, try e.input(c)], [y], options: "AddOptions") }
    }

    static func matmul(_ e: inout TFLiteEmitter, _ n: Node) throws {
        let a = try arity(n, 0), bName = try arity(n, 1)
        let sa = try e.shape(a), sb = try e.shape(bName)
        guard sa.count >= 2, sb.count >= 2 else { throw TFLiteOpError("1-D operands") }
        if e.g.isConstant(e.resolve(bName)), sb.count == 2 {
            let w = try e.weight(bName, perm: [1, 0], hybrid: .init(axis: 0, perChannel: false))
            return try fullyConnected(&e, input: try e.input(a), weight: w, bias: nil, output: try e.output(n), keepDims: sa.count > 2,
                                      activation: activation(n))
        }
        try e.op("BATCH_MATMUL", [try e.input(a), try e.input(bName)], [try e.output(n)], options: "BatchMatMulOptions")
    }
}
