import Foundation
import ONNXSchema
import ShrinkwrapIR

/// Stores each constant in its encoding, with the standard ops that decode it
/// at run time; the decoded value keeps the constant's name, so the nodes
/// that read it are unchanged:
///
/// | encoding | initializers | decoded by |
/// |---|---|---|
/// | dense | the tensor | — |
/// | fp16 | float16 | Cast(to float) |
/// | affine, integer zero points | codes, scales, zero points | DequantizeLinear: per tensor, per axis, or per block (opset 21; trailing axes that share a block merged into it, then Reshape) |
/// | affine, fractional zero points | codes, scales, biases | DequantizeLinear + Add(bias; per block Expand · Reshape · Slice of one bias per block) |
/// | palette | indices, one table per group, flattened | Cast(int32) [+ Add(group offsets from Range)] → Gather(table) |
///
/// Codes and indices take their own width (`storeCodes`): 8 bits as int8 /
/// uint8, 4 bits as int4 / uint4 (opset 21, IR version 10), other widths
/// bit-packed in uint8 and unpacked by standard integer ops, so a 2-bit
/// weight takes 2 bits in the file too. Layouts DequantizeLinear cannot read
/// (blocks along two axes) are Cast · Mul · Add over a split view.
struct ONNXWeightWriter {
    var initializers: [Onnx_TensorProto] = []
    var nodes: [Onnx_NodeProto] = []
    /// Lowest opset the stored forms need.
    var minimumOpset = 0
    /// Payload bytes of the initializers that hold weight data (codes,
    /// scales, zero points, biases, tables, dense tensors); shapes, axes and
    /// unpacking constants are graph structure.
    var payloadBytes = 0
    /// Names of those initializers.
    var weightData = Set<String>()

    mutating func add(_ c: Constant, names: inout NameAllocator) throws {
        do {
            switch c.encoding {
            case .dense(let t):
                addInitializer(ONNXWeightWriter.tensorProto(t, name: c.name))
            case .float16(let h):
                let stored = names.fresh("\(c.name)_fp16")
                addInitializer(raw(stored, type: .float16, dims: h.shape, bytes: littleEndian(h.bits)))
                addNode("Cast", [stored], c.name, ["to": .int(DType.float32.onnxDataType)], names: &names, hint: c.name)
            case .affine(let a):
                try addAffine(a, name: c.name, names: &names)
            case .palette(let p):
                try addPalette(p, name: c.name, names: &names)
            }
        } catch let e as WeightLayoutError {
            throw ExportError.unsupportedWeight(format: "ONNX", tensor: c.name, reason: e.reason)
        }
    }

    // MARK: linear

    /// How DequantizeLinear can read an affine weight: one scale, one per
    /// index of `axis`, or blocks of `blockSize` along `axis` of `view`
    /// (the weight with trailing shared axes merged into the block axis).
    enum DQLayout: Equatable {
        case perTensor
        case perAxis(Int)
        case blocked(view: [Int], axis: Int, blockSize: Int, scaleShape: [Int])
    }

    static func dqLayout(_ a: AffineWeights) -> DQLayout? {
        let shape = a.shape
        let varying = shape.indices.filter { a.blockShape[$0] < shape[$0] }
        if varying.isEmpty { return .perTensor }
        let blocked = varying.filter { a.blockShape[$0] > 1 }
        if blocked.isEmpty && varying.count == 1 { return .perAxis(varying[0]) }
        guard blocked.count == 1 else { return nil }
        let k = blocked[0]
        // Every other axis must have its own scales (or size 1), except that axes
        // after k that all share one block fold into k.
        func own(_ j: Int) -> Bool { shape[j] == 1 || a.blockShape[j] == 1 }
        guard (0..<k).allSatisfy(own) else { return nil }
        let after = Array((k + 1)..<shape.count)
        if after.allSatisfy(own) {
            return .blocked(view: shape, axis: k, blockSize: a.blockShape[k], scaleShape: a.scaleShape)
        }
        guard after.allSatisfy({ a.blockShape[$0] >= shape[$0] }) else { return nil }
        let inner = after.reduce(1) { $0 * shape[$1] }
        let view = Array(shape[..<k]) + [shape[k] * inner]
        return .blocked(view: view, axis: k, blockSize: a.blockShape[k] * inner, scaleShape: Array(a.scaleShape[...k]))
    }

    /// Codes as stored: an initializer of a 4- or 8-bit type, or (other
    /// widths) a bit-packed uint8 initializer and the ops that unpack it.
    struct StoredCodes {
        /// The value holding the codes, in `dims`.
        var value: String
        /// Its ONNX type (uint8 / int8 / uint4 / int4, or int64 when unpacked by ops).
        var type: Onnx_TensorProto.DataType
    }

    /// Stores `values` (b-bit codes, signed or not) in `dims`. 8 → int8 / uint8,
    /// 4 → int4 / uint4 (opset 21); other widths must be unsigned: they are
    /// bit-packed, 8 codes in b bytes, and unpacked to int64 by
    /// Cast · MatMul · Div · Mod · Reshape [· Slice] · Reshape.
    mutating func storeCodes(_ name: String, values: [Int], bits: Int, signed: Bool, dims: [Int],
                             names: inout NameAllocator) -> StoredCodes {
        if bits == 8 || bits == 4 {
            let type: Onnx_TensorProto.DataType = bits == 8 ? (signed ? .int8 : .uint8) : (signed ? .int4 : .uint4)
            if bits == 4 { minimumOpset = max(minimumOpset, 21) }
            let q = names.fresh(name)
            addInitializer(codes(q, type: type, dims: dims, values: values))
            return StoredCodes(value: q, type: type)
        }
        let n = values.count, rows = (n + 7) / 8
        var bytes = BitPacking.pack(values.map { UInt8(truncatingIfNeeded: $0) }, bits: bits, order: .lsbFirst)
        bytes += [UInt8](repeating: 0, count: rows * bits - bytes.count)
        let packed = names.fresh("\(name)_packed\(bits)")
        addInitializer(raw(packed, type: .uint8, dims: [rows, bits], bytes: Data(bytes)))
        let wide = names.fresh("\(name)_bytes")
        addNode("Cast", [packed], wide, ["to": .int(DType.int64.onnxDataType)], names: &names, hint: name)
        // The b bytes of each row as one little-endian integer: Σ byte_j · 256^j,
        // as an integer MatMul (onnxruntime's int64 ReduceSum rounds above 2^53).
        let weights = names.fresh("\(name)_byte_weights"), word = names.fresh("\(name)_words")
        addInitializer(raw(weights, type: .int64, dims: [bits, 1], bytes: littleEndian((0..<bits).map { UInt64(1) << (8 * $0) })),
                       structure: true)
        addNode("MatMul", [wide, weights], word, [:], names: &names, hint: name)
        // Code i of a row: (word / 2^(b·i)) mod 2^b.
        let divisors = names.fresh("\(name)_code_shifts"), moved = names.fresh("\(name)_shifted")
        addInitializer(int64s(divisors, (0..<8).map { 1 << (bits * $0) }), structure: true)
        addNode("Div", [word, divisors], moved, [:], names: &names, hint: name)
        let modulus = names.fresh("\(name)_code_range"), split = names.fresh("\(name)_unpacked")
        addInitializer(raw(modulus, type: .int64, dims: [], bytes: littleEndian([UInt64(1 << bits)])), structure: true)
        addNode("Mod", [moved, modulus], split, [:], names: &names, hint: name)
        var flat = names.fresh("\(name)_flat")
        reshape(split, to: [rows * 8], output: flat, names: &names)
        if rows * 8 != n {
            let starts = names.fresh("\(name)_start"), ends = names.fresh("\(name)_end"), cut = names.fresh("\(name)_cut")
            addInitializer(int64s(starts, [0]), structure: true)
            addInitializer(int64s(ends, [n]), structure: true)
            addNode("Slice", [flat, starts, ends], cut, [:], names: &names, hint: name)
            flat = cut
        }
        let out = names.fresh("\(name)_codes")
        reshape(flat, to: dims, output: out, names: &names)
        return StoredCodes(value: out, type: .int64)
    }

    /// The same weight with unsigned codes `q − min` and biases `bias + scale · min`
    /// (bit-packed widths are stored unsigned).
    static func unsignedForm(_ a: AffineWeights) throws(WeightLayoutError) -> AffineWeights {
        guard a.signed else { return a }
        let lo = a.codeRange.lowerBound
        return try AffineWeights(shape: a.shape, bits: a.bits, signed: false, q: a.q.map { $0 - Int16(lo) },
                                 blockShape: a.blockShape, scale: a.scale,
                                 bias: zip(a.scale, a.bias).map { Float(Double($1) + Double($0) * Double(lo)) })
    }

    /// Codes DequantizeLinear can read: unpacked int64 codes are cast to uint8.
    mutating func dqCodes(_ c: StoredCodes, name: String, names: inout NameAllocator) -> StoredCodes {
        guard c.type == .int64 else { return c }
        let u = names.fresh("\(name)_quantized")
        addNode("Cast", [c.value], u, ["to": .int(DType.uint8.onnxDataType)], names: &names, hint: name)
        return StoredCodes(value: u, type: .uint8)
    }

    mutating func addAffine(_ original: AffineWeights, name: String, names: inout NameAllocator) throws {
        var a = original
        if a.bits != 8 && a.bits != 4 { a = try ONNXWeightWriter.unsignedForm(a) }
        guard let layout = ONNXWeightWriter.dqLayout(a) else {
            try addAffineArithmetic(a, name: name, names: &names)
            return
        }
        let zeroPoints = a.integerZeroPoints
        let (view, scaleDims, attrs): ([Int], [Int], [String: Attribute]) = {
            switch layout {
            case .perTensor: return (a.shape, [], [:])
            case .perAxis(let k): return (a.shape, [a.shape[k]], ["axis": .int(k)])
            case .blocked(let v, let k, let b, let s): return (v, s, ["axis": .int(k), "block_size": .int(b)])
            }
        }()
        if isBlocked(layout) { minimumOpset = max(minimumOpset, 21) }
        let stored = dqCodes(storeCodes("\(name)_quantized", values: a.q.map(Int.init), bits: a.bits, signed: a.signed,
                                        dims: view, names: &names), name: name, names: &names)
        let s = names.fresh("\(name)_scale")
        addInitializer(raw(s, type: .float, dims: scaleDims, bytes: littleEndian(a.scale.map(\.bitPattern))))
        var inputs = [stored.value, s]
        if let z = zeroPoints, z.contains(where: { $0 != 0 }) {
            let zn = names.fresh("\(name)_zero_point")
            addInitializer(codes(zn, type: stored.type, dims: scaleDims, values: z))
            inputs.append(zn)
        }
        let fractional = zeroPoints == nil
        let needsReshape = view != a.shape
        let dq = fractional || needsReshape ? names.fresh("\(name)_dequantized") : name
        addNode("DequantizeLinear", inputs, dq, attrs, names: &names, hint: name)
        var current = dq
        if fractional {
            let bias = biasTensor(a, layout: layout, view: view, scaleDims: scaleDims, name: name, names: &names)
            let out = needsReshape ? names.fresh("\(name)_biased") : name
            addNode("Add", [current, bias], out, [:], names: &names, hint: name)
            current = out
        }
        if needsReshape { reshape(current, to: a.shape, output: name, names: &names) }
    }

    /// The biases as a value that broadcasts against the DequantizeLinear
    /// output: [d, 1, …] per axis, a scalar per tensor; per block, stored as
    /// […, blocks, 1, …] and Expand · Reshape [· Slice]d to the view's shape.
    mutating func biasTensor(_ a: AffineWeights, layout: DQLayout, view: [Int], scaleDims: [Int], name: String,
                             names: inout NameAllocator) -> String {
        let b = names.fresh("\(name)_bias")
        let values = littleEndian(a.bias.map(\.bitPattern))
        switch layout {
        case .perTensor:
            addInitializer(raw(b, type: .float, dims: [], bytes: values))
            return b
        case .perAxis(let k):
            var dims = [Int](repeating: 1, count: a.shape.count - k)
            dims[0] = a.shape[k]
            addInitializer(raw(b, type: .float, dims: dims, bytes: values))
            return b
        case .blocked(_, let k, let size, _):
            var stored = scaleDims
            stored.insert(1, at: k + 1)
            addInitializer(raw(b, type: .float, dims: stored, bytes: values))
            var expandedDims = stored
            expandedDims[k + 1] = size
            let shape = names.fresh("\(name)_bias_blocks"), expanded = names.fresh("\(name)_bias_expanded")
            addInitializer(int64s(shape, expandedDims), structure: true)
            addNode("Expand", [b, shape], expanded, [:], names: &names, hint: name)
            var merged = view
            merged[k] = scaleDims[k] * size
            let full = names.fresh("\(name)_bias_full")
            if merged == view {
                reshape(expanded, to: view, output: full, names: &names)
                return full
            }
            let padded = names.fresh("\(name)_bias_padded")
            reshape(expanded, to: merged, output: padded, names: &names)
            let starts = names.fresh("\(name)_bias_start"), ends = names.fresh("\(name)_bias_end"), axes = names.fresh("\(name)_bias_axis")
            addInitializer(int64s(starts, [0]), structure: true)
            addInitializer(int64s(ends, [view[k]]), structure: true)
            addInitializer(int64s(axes, [k]), structure: true)
            addNode("Slice", [padded, starts, ends, axes], full, [:], names: &names, hint: name)
            return full
        }
    }

    func isBlocked(_ l: DQLayout) -> Bool { if case .blocked = l { return true } else { return false } }

    /// `scale × q + bias` as Cast · Mul · Add over a view where every blocked
    /// axis is split into (blocks, block length), padded to whole blocks, so
    /// that scales and biases broadcast; then Reshape and Slice back. For
    /// layouts DequantizeLinear cannot read (blocks along two axes).
    mutating func addAffineArithmetic(_ a: AffineWeights, name: String, names: inout NameAllocator) throws {
        let shape = a.shape
        var view: [Int] = [], params: [Int] = [], padded: [Int] = []
        for (d, b) in zip(shape, a.blockShape) {
            if b >= d { view.append(d); params.append(1); padded.append(d) }
            else if b == 1 { view.append(d); params.append(d); padded.append(d) }
            else {
                let nb = (d + b - 1) / b
                view += [nb, b]; params += [nb, 1]; padded.append(nb * b)
            }
        }
        guard checkedElementCount(padded, limit: 1 << 31) != nil else {
            throw WeightLayoutError("blocks of \(a.blockShape) over \(shape) are too large to lay out")
        }
        // Codes in the padded layout (padding codes are 0 and cut off by the Slice).
        var q = a.q.map(Int.init)
        if padded != shape {
            q = [Int](repeating: 0, count: padded.reduce(1, *))
            let src = stridesOf(shape), dst = stridesOf(padded)
            for i in 0..<a.q.count {
                var rem = i, j = 0
                for k in shape.indices { let c = rem / src[k]; rem -= c * src[k]; j += c * dst[k] }
                q[j] = Int(a.q[i])
            }
        }
        let stored = storeCodes("\(name)_quantized", values: q, bits: a.bits, signed: a.signed, dims: view, names: &names)
        let s = names.fresh("\(name)_scale")
        addInitializer(raw(s, type: .float, dims: params, bytes: littleEndian(a.scale.map(\.bitPattern))))
        let f = names.fresh("\(name)_codes_float")
        addNode("Cast", [stored.value], f, ["to": .int(DType.float32.onnxDataType)], names: &names, hint: name)
        let last = view == shape && a.isSymmetric
        let scaled = last ? name : names.fresh("\(name)_scaled")
        addNode("Mul", [f, s], scaled, [:], names: &names, hint: name)
        var current = scaled
        if !a.isSymmetric {
            let b = names.fresh("\(name)_bias")
            addInitializer(raw(b, type: .float, dims: params, bytes: littleEndian(a.bias.map(\.bitPattern))))
            let out = view == shape ? name : names.fresh("\(name)_biased")
            addNode("Add", [current, b], out, [:], names: &names, hint: name)
            current = out
        }
        if view != shape {
            if padded == shape {
                reshape(current, to: shape, output: name, names: &names)
            } else {
                let full = names.fresh("\(name)_padded")
                reshape(current, to: padded, output: full, names: &names)
                let starts = names.fresh("\(name)_starts"), ends = names.fresh("\(name)_ends")
                addInitializer(int64s(starts, [Int](repeating: 0, count: shape.count)), structure: true)
                addInitializer(int64s(ends, shape), structure: true)
                addNode("Slice", [full, starts, ends], name, [:], names: &names, hint: name)
            }
        }
    }

    // MARK: palettes

    mutating func addPalette(_ p: PaletteWeights, name: String, names: inout NameAllocator) throws {
        let entries = 1 << p.bits
        let stored = storeCodes("\(name)_indices", values: p.indices.map(Int.init), bits: p.bits,
                                signed: false, dims: p.shape, names: &names)
        let lut = names.fresh("\(name)_lut")
        addInitializer(raw(lut, type: .float, dims: [p.lut.count * entries], bytes: littleEndian(p.lut.joined().map(\.bitPattern))))
        var current = stored.value
        var indexType = DType.int64
        if stored.type != .int64 {
            current = names.fresh("\(name)_indices_int32")
            indexType = .int32
            addNode("Cast", [stored.value], current, ["to": .int(DType.int32.onnxDataType)], names: &names, hint: name)
        }
        if p.lut.count > 1 {
            // Group g's table starts at g · 2^bits in the flattened tables:
            // offset(c) = (c / groupSize) · 2^bits for index c of the axis, made by
            // Range · Div · Mul · Reshape from three scalars.
            let dim = p.shape[p.axis]
            func scalar(_ hint: String, _ v: Int) -> String {
                let n = names.fresh("\(name)_\(hint)")
                if indexType == .int32 {
                    addInitializer(raw(n, type: .int32, dims: [], bytes: littleEndian([UInt32(truncatingIfNeeded: v)])), structure: true)
                } else {
                    addInitializer(raw(n, type: .int64, dims: [], bytes: littleEndian([UInt64(v)])), structure: true)
                }
                return n
            }
            let zero = scalar("axis_start", 0), count = scalar("axis_length", dim), one = scalar("axis_step", 1)
            let channel = names.fresh("\(name)_channel")
            addNode("Range", [zero, count, one], channel, [:], names: &names, hint: name)
            let group = names.fresh("\(name)_group")
            addNode("Div", [channel, scalar("group_size", p.groupSize)], group, [:], names: &names, hint: name)
            let start = names.fresh("\(name)_group_start")
            addNode("Mul", [group, scalar("table_size", entries)], start, [:], names: &names, hint: name)
            var dims = [Int](repeating: 1, count: p.shape.count - p.axis)
            dims[0] = dim
            let offsets = names.fresh("\(name)_group_offsets")
            reshape(start, to: dims, output: offsets, names: &names)
            let shifted = names.fresh("\(name)_table_indices")
            addNode("Add", [current, offsets], shifted, [:], names: &names, hint: name)
            current = shifted
        }
        addNode("Gather", [lut, current], name, ["axis": .int(0)], names: &names, hint: name)
    }

    // MARK: building blocks

    mutating func addInitializer(_ t: Onnx_TensorProto, structure: Bool = false) {
        if !structure {
            payloadBytes += t.rawData.count
            weightData.insert(t.name)
        }
        initializers.append(t)
    }

    mutating func addNode(_ op: String, _ inputs: [String], _ output: String, _ attrs: [String: Attribute],
                          names: inout NameAllocator, hint: String) {
        var p = Onnx_NodeProto()
        p.name = names.fresh("\(hint)_decode_\(op.lowercased())")
        p.opType = op
        p.input = inputs
        p.output = [output]
        for key in attrs.keys.sorted() {
            guard let v = attrs[key] else { continue }
            var a = Onnx_AttributeProto()
            a.name = key
            if case .int(let i) = v { a.type = .int; a.i = Int64(i) }
            p.attribute.append(a)
        }
        nodes.append(p)
    }

    mutating func reshape(_ input: String, to shape: [Int], output: String, names: inout NameAllocator) {
        let s = names.fresh("\(output)_shape")
        addInitializer(int64s(s, shape), structure: true)
        addNode("Reshape", [input, s], output, [:], names: &names, hint: output)
    }

    func int64s(_ name: String, _ values: [Int]) -> Onnx_TensorProto {
        raw(name, type: .int64, dims: [values.count], bytes: littleEndian(values.map { UInt64(bitPattern: Int64($0)) }))
    }

    /// Integer codes as `type` (4-bit types packed two per byte, low nibble first).
    func codes(_ name: String, type: Onnx_TensorProto.DataType, dims: [Int], values: [Int]) -> Onnx_TensorProto {
        let bytes: [UInt8]
        switch type {
        case .int4, .uint4: bytes = BitPacking.pack(values.map { UInt8(truncatingIfNeeded: $0) & 0xF }, bits: 4, order: .onnx4Bit)
        default: bytes = values.map { UInt8(truncatingIfNeeded: $0) }
        }
        return raw(name, type: type, dims: dims, bytes: Data(bytes))
    }

    func raw(_ name: String, type: Onnx_TensorProto.DataType, dims: [Int], bytes: Data) -> Onnx_TensorProto {
        var t = Onnx_TensorProto()
        t.name = name
        t.dataType = Int32(type.rawValue)
        t.dims = dims.map(Int64.init)
        t.rawData = bytes
        return t
    }

    /// A dense tensor, raw little-endian bytes in its own dtype.
    static func tensorProto(_ t: Tensor, name: String) -> Onnx_TensorProto {
        var p = Onnx_TensorProto()
        p.name = name
        p.dataType = Int32(t.dtype.onnxDataType)
        p.dims = t.shape.map(Int64.init)
        var out: [UInt8] = []
        t.appendLittleEndianBytes(to: &out)
        p.rawData = Data(out)
        return p
    }
}

/// Little-endian bytes of fixed-width integers.
func littleEndian<T: FixedWidthInteger>(_ values: [T]) -> Data {
    var out = Data()
    out.reserveCapacity(values.count * MemoryLayout<T>.size)
    for v in values { withUnsafeBytes(of: v.littleEndian) { out.append(contentsOf: $0) } }
    return out
}
