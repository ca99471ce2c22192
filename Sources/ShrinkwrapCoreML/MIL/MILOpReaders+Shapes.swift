import ShrinkwrapIR

/// Shape and layout ops: reshape, transpose, concat / stack / split,
/// squeeze / expand_dims, pad, tile, cast, shape, fill, range.
extension MILOpReaders {
    static let shapes: [String: MILOpReader] = [
        "reshape": { r in try r.reshape() },
        "transpose": { r in
            guard let perm = try r.intList("perm") else { throw r.bad("transpose without perm") }
            r.node("Transpose", [try r.x()], [r.out()], ["perm": .ints(try perm.map { try r.axis($0, rank: perm.count) })])
        },
        "concat": { r in
            let values = try r.list("values")
            guard !(try r.bool("interleave", false)) else { throw r.refuse("concat with interleave = true") }
            guard let rank = r.rank(r.out()) ?? r.rank(values[0]) else { throw r.refuse("concat of values without a fixed rank") }
            r.node("Concat", values, [r.out()], ["axis": .int(try r.axis(try r.int("axis", 0), rank: rank))])
        },
        "stack": { r in try r.stack() },
        "split": { r in try r.split() },
        "squeeze": { r in
            let x = try r.x()
            if let axes = try r.intList("axes") { r.node("Squeeze", [x, r.ints(axes, "\(r.out())_axes")], [r.out()]) }
            else { r.node("Squeeze", [x], [r.out()]) }
        },
        "expand_dims": { r in
            guard let axes = try r.intList("axes") else { throw r.bad("expand_dims without axes") }
            r.node("Unsqueeze", [try r.x(), r.ints(axes, "\(r.out())_axes")], [r.out()])
        },
        "pad": { r in try r.pad() },
        "tile": { r in
            let reps = try r.x("reps")
            r.node("Tile", [try r.x(), try r.asInt64(reps)], [r.out()])
        },
        "cast": { r in try r.cast() },
        "shape": { r in r.int32Output("Shape", [try r.x()]) },
        "fill": { r in try r.fill() },
        "range_1d": { r in r.node("Range", [try r.x("start"), try r.x("end"), try r.x("step")], [r.out()]) },
    ]
}

extension MILReader {
    /// reshape: to the declared output shape when it is fixed, else to the shape input (0 copies, −1 is inferred).
    mutating func reshape() throws {
        let x = try self.x()
        if let s = shape(out()) {
            node("Reshape", [x, ints(s, "\(out())_shape")], [out()])
        } else {
            node("Reshape", [x, try asInt64(try self.x("shape"))], [out()])
        }
    }

    /// An integer tensor as int64 (what the IR's shape inputs hold): constants convert, values get a Cast.
    mutating func asInt64(_ v: String) throws -> String {
        if let c = graph.constant(named: v) {
            guard let a = c.encoding.decoded().ints else { return v }
            return constant(.dense(Tensor(ints: a, shape: c.encoding.shape)), "\(v)_int64")
        }
        let t = temp("int64")
        node("Cast", [v], [t], ["to": .int(DType.int64.onnxDataType)])
        return t
    }

    /// stack: Unsqueeze each value at `axis`, then Concat.
    mutating func stack() throws {
        let values = try list("values")
        guard let r = rank(out()) else { throw refuse("stack without a fixed output rank") }
        let a = try axis(try int("axis", 0), rank: r)
        let axes = ints([a], "\(out())_axes")
        var expanded: [String] = []
        for v in values {
            let e = temp("expanded")
            node("Unsqueeze", [v, axes], [e])
            expanded.append(e)
        }
        node("Concat", expanded, [out()], ["axis": .int(a)])
    }

    /// split: num_splits (equal parts) or split_sizes along axis.
    mutating func split() throws {
        let x = try self.x()
        let r = try needRank(x)
        let a = try axis(try int("axis", 0), rank: r)
        let outputs = op.outputs.map(\.name)
        if let sizes = try intList("split_sizes") {
            guard sizes.count == outputs.count else { throw bad("\(sizes.count) split sizes for \(outputs.count) outputs") }
            node("Split", [x, ints(sizes, "\(out())_sizes")], outputs, ["axis": .int(a)])
        } else {
            // Equal parts: the declared output sizes when known (the last may be smaller), else ONNX's rule.
            let declared = outputs.compactMap { shape($0).map { $0.count > a ? $0[a] : -1 } }
            if declared.count == outputs.count, declared.allSatisfy({ $0 >= 0 }) {
                node("Split", [x, ints(declared, "\(out())_sizes")], outputs, ["axis": .int(a)])
            } else {
                node("Split", [x], outputs, ["axis": .int(a), "num_outputs": .int(outputs.count)])
            }
        }
    }

    /// pad: [before, after] pairs for the last N axes; constant / reflect / replicate.
    mutating func pad() throws {
        let x = try self.x()
        let r = try needRank(x)
        guard let p = try intList("pad"), p.count % 2 == 0, p.count / 2 <= r else { throw bad("pad must be 2N values for N ≤ rank \(r)") }
        let lead = r - p.count / 2
        let begins = Array(repeating: 0, count: lead) + stride(from: 0, to: p.count, by: 2).map { p[$0] }
        let ends = Array(repeating: 0, count: lead) + stride(from: 1, to: p.count, by: 2).map { p[$0] }
        let mode: String
        switch try string("mode", "constant") {
        case "constant": mode = "constant"
        case "reflect": mode = "reflect"
        case "replicate": mode = "edge"
        case let m: throw refuse("pad mode '\(m)'")
        }
        var inputs = [x, ints(begins + ends, "\(out())_pads")]
        if mode == "constant" { inputs.append(scalar(try float("constant_val", 0), "\(out())_value")) }
        node("Pad", inputs, [out()], ["mode": .string(mode)])
    }

    /// cast: between float types an Identity (the IR computes in float32); to integers or bool a Cast.
    mutating func cast() throws {
        let x = try self.x()
        let to = try string("dtype", "fp32")
        switch to {
        // A program in float16 runs in float32 here: casts to any float type give float32 (from a float,
        // an identity; from a bool or an integer, a real conversion).
        case "fp16", "fp32", "fp64": node("Cast", [x], [out()], ["to": .int(DType.float32.onnxDataType)])
        case "int32", "int16", "int8", "uint8", "uint16", "int64":
            let d: DType = ["int32": .int32, "int16": .int16, "int8": .int8, "uint8": .uint8, "uint16": .uint16, "int64": .int64][to] ?? .int32
            node("Cast", [x], [out()], ["to": .int(d.onnxDataType)])
        case "bool": node("Cast", [x], [out()], ["to": .int(DType.bool.onnxDataType)])
        default: throw refuse("cast to '\(to)'")
        }
    }

    /// fill: a tensor of `shape` holding `value`.
    mutating func fill() throws {
        let shapeInput = try asInt64(try self.x("shape"))
        let value: String
        if let v = try opt("value") { value = v } else { value = scalar(0, "\(out())_value") }
        node("Expand", [value, shapeInput], [out()])
    }
}
