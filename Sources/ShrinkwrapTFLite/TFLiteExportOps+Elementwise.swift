import FlatBuffers
import ShrinkwrapIR

/// Element-wise writers: activations, arithmetic, clip, softmax.
extension TFLiteExportOps {
    static func simple(_ e: inout TFLiteEmitter, _ n: Node, _ op: String) throws {
        try e.op(op, [try e.input(try arity(n, 0))], [try e.output(n)])
    }

    static func identity(_ e: inout TFLiteEmitter, _ n: Node) throws {
        let x = try arity(n, 0)
        guard let y = n.outputs.first, !y.isEmpty else { return }
        if e.g.outputs.contains(y) {
            let out = try e.output(n)
            try e.reshape(try e.input(x), to: try e.shape(y), into: out)
        } else {
            e.alias[y] = e.resolve(x)
        }
    }

    static func elementwise(_ e: inout TFLiteEmitter, _ n: Node, _ op: String, _ options: String?) throws {
        let ins = n.inputs.filter { !$0.isEmpty }
        guard ins.count >= 2 else {
            guard ins.count == 1, ["Sum", "Max", "Min"].contains(n.opType) else { throw TFLiteOpError("needs two inputs") }
            return try identity(&e, Node(name: n.name, opType: "Identity", inputs: ins, outputs: n.outputs))
        }
        if ins.count > 2 && !["Sum", "Max", "Min"].contains(n.opType) { throw TFLiteOpError("\(ins.count) inputs") }
        let y = try e.output(n)
        var acc = try e.input(ins[0])
        var accShape = try e.shape(ins[0])
        for (k, v) in ins.enumerated().dropFirst() {
            let s = broadcast(accShape, try e.shape(v))
            let out = k == ins.count - 1 ? y : try e.temp(n.outputs[0] + "_partial", shape: s, dtype: e.dtype(n.outputs[0]))
            let act = k == ins.count - 1 ? activation(n) : 0
            if act != 0 {
                try e.op(op, [acc, try e.input(v)], [out], options: options) { b in b.table { t in t.add(0, act, default: 0) } }
            } else {
                try e.op(op, [acc, try e.input(v)], [out], options: options)
            }
            acc = out
            accShape = s
        }
    }

    /// Mean of n inputs: their sum × 1/n.
    static func mean(_ e: inout TFLiteEmitter, _ n: Node) throws {
        let ins = n.inputs.filter { !$0.isEmpty }
        guard !ins.isEmpty, let yName = n.outputs.first else { throw TFLiteOpError("no inputs") }
        let sumName = e.g.fresh(yName + "_sum")
        e.g.shapes[sumName] = try e.shape(yName)
        e.g.dtypes[sumName] = e.dtype(yName)
        try elementwise(&e, Node(name: n.name, opType: "Sum", inputs: ins, outputs: [sumName]), "ADD", "AddOptions")
        let s = try e.input(sumName)
        let k = e.floatConstant("one_over_n", [1 / Float(ins.count)], shape: [])
        try e.op("MUL", [s, k], [try e.output(n)], options: "MulOptions")
    }

    static func reciprocal(_ e: inout TFLiteEmitter, _ n: Node) throws {
        let one = e.floatConstant("one", [1], shape: [])
        try e.op("DIV", [one, try e.input(try arity(n, 0))], [try e.output(n)], options: "DivOptions")
    }

    static func clip(_ e: inout TFLiteEmitter, _ n: Node) throws {
        let x = try arity(n, 0)
        var lo: Float? = n.attributes["min"].flatMap { if case .float(let v) = $0 { return v } else { return nil } }
        var hi: Float? = n.attributes["max"].flatMap { if case .float(let v) = $0 { return v } else { return nil } }
        // A bound computed at run time (a scalar, e.g. max(x) − 80 in a log-mel front end) is MAXIMUM / MINIMUM's operand.
        var runtime: [Int: Int] = [:]
        for k in [1, 2] {
            guard let m = n.input(k) else { continue }
            if e.g.isConstant(e.resolve(m)) {
                let v = try constFloats(e, m, k == 1 ? "min" : "max").first
                if k == 1 { lo = v } else { hi = v }
            } else {
                guard try e.shape(m).reduce(1, *) == 1 else { throw TFLiteOpError("\(k == 1 ? "min" : "max") is not a scalar") }
                runtime[k] = try e.input(m)
                if k == 1 { lo = nil } else { hi = nil }
            }
        }
        let xt = try e.input(x)
        let y = try e.output(n)
        if !runtime.isEmpty {
            var cur = xt
            if let lower = runtime[1] ?? lo.map({ e.floatConstant("clip_min", [$0], shape: []) }) {
                let out = hi == nil && runtime[2] == nil ? y : try e.temp(n.outputs[0] + "_lo", shape: try e.shape(x))
                try e.op("MAXIMUM", [cur, lower], [out], options: "MaximumMinimumOptions")
                cur = out
            }
            if let upper = runtime[2] ?? hi.map({ e.floatConstant("clip_max", [$0], shape: []) }) {
                try e.op("MINIMUM", [cur, upper], [y], options: "MaximumMinimumOptions")
            }
            return
        }
        if hi == .infinity { hi = nil }
        if lo == -.infinity { lo = nil }
        if lo == 0, hi == 6 {
            try e.op("RELU6", [xt], [y])
        } else if lo == -1, hi == 1 {
            try e.op("RELU_N1_TO_1", [xt], [y])
        } else if lo == 0, hi == nil {
            try e.op("RELU", [xt], [y])
        } else if lo == nil, hi == nil {
            try e.reshape(xt, to: try e.shape(x), into: y)
        } else {
            var cur = xt
            if let lo {
                let out = hi == nil ? y : try e.temp(n.outputs[0] + "_lo", shape: try e.shape(x))
                try e.op("MAXIMUM", [cur, e.floatConstant("clip_min", [lo], shape: [])], [out], options: "MaximumMinimumOptions")
                cur = out
            }
            if let hi {
                try e.op("MINIMUM", [cur, e.floatConstant("clip_max", [hi], shape: [])], [y], options: "MaximumMinimumOptions")
            }
        }
    }

    static func leakyRelu(_ e: inout TFLiteEmitter, _ n: Node) throws {
        let alpha = n.float("alpha", 0.01)
        try e.op("LEAKY_RELU", [try e.input(try arity(n, 0))], [try e.output(n)], options: "LeakyReluOptions") { b in b.table { t in t.add(0, alpha, default: 0) } }
    }

    static func elu(_ e: inout TFLiteEmitter, _ n: Node) throws {
        guard n.float("alpha", 1) == 1 else { throw TFLiteOpError("alpha \(n.float("alpha", 1)) (TFLite's ELU has alpha 1)") }
        try simple(&e, n, "ELU")
    }

    static func prelu(_ e: inout TFLiteEmitter, _ n: Node) throws {
        let x = try arity(n, 0), slope = try arity(n, 1)
        try e.op("PRELU", [try e.input(x), try e.input(slope)], [try e.output(n)])
    }

    static func softmax(_ e: inout TFLiteEmitter, _ n: Node, _ op: String) throws {
        let x = try arity(n, 0)
        let s = try e.shape(x)
        let r = max(s.count, 1)
        let axis = try normalize(n.int("axis", -1), rank: r)
        let options = op == "SOFTMAX" ? "SoftmaxOptions" : "LogSoftmaxOptions"
        func write(_ e: inout TFLiteEmitter, _ i: Int, _ o: Int) throws {
            if op == "SOFTMAX" {
                try e.op(op, [i], [o], options: options) { b in b.table { t in t.add(0, Float(1), default: 0) } }
            } else {
                try e.op(op, [i], [o], options: options)
            }
        }
        let y = try e.output(n)
        if axis == r - 1 { return try write(&e, try e.input(x), y) }
        // Softmax over another axis: move it last and back.
        var perm = Array(0..<r)
        perm.remove(at: axis)
        perm.append(axis)
        let inv = Permutation.inverse(perm)
        let xt = try e.temp(x + "_axis_last", shape: Permutation.apply(perm, to: s))
        try e.op("TRANSPOSE", [try e.input(x), try e.int32Constant("perm", perm)], [xt], options: "TransposeOptions")
        let yt = try e.temp(n.outputs[0] + "_axis_last", shape: Permutation.apply(perm, to: s))
        try write(&e, xt, yt)
        try e.op("TRANSPOSE", [yt, try e.int32Constant("perm", inv)], [y], options: "TransposeOptions")
    }
}
