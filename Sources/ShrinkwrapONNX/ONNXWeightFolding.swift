import ShrinkwrapIR

/// Reading compressed weights back: the op patterns that decode a stored
/// weight at run time (the ones `ONNXWeightWriter` writes, and the
/// DequantizeLinear weights of onnxruntime's QDQ quantizer) become weight
/// encodings again, so a compressed ONNX file reports its real weight size
/// and converts to other formats with its compression intact.
extension ONNXOps {
    /// DequantizeLinear is kept as a node here and folded into an affine
    /// weight by `foldWeightDecoding` when its codes are constants.
    static func dequantizeLinear(_ b: inout GraphBuilder, _ n: Node, _ place: String) throws {
        b.dequantizePlaces[n.outputs.first ?? ""] = place
        b.emit(n)
    }
}

extension GraphBuilder {
    /// Folds the run-time decoding of stored weights back into encodings, in
    /// node order so that each step sees the ones before it:
    /// - bit-packed codes: Cast · MatMul · Div · Mod · Reshape [· Slice] · Reshape of a uint8 constant → the codes;
    /// - Cast(float16 constant → float) → fp16; Cast(unpacked codes → uint8) → the codes;
    /// - DequantizeLinear(constant codes, scales, zero points) → affine (codes wider than 8 bits → float values);
    /// - Add(affine, constant per block) → the affine's biases;
    /// - Reshape(compressed constant) → the reshaped encoding;
    /// - [Cast(codes → int)] [+ offsets (a constant, or Range · Div · Mul · Reshape)] → Gather(table) → a palette.
    /// Anything else stays as ops, which the interpreter runs (a DequantizeLinear
    /// of a computed value too).
    mutating func foldWeightDecoding() throws {
        var scan = WeightFoldScan(graph, fourBitConstants: fourBitConstants)
        for k in graph.nodes.indices where !scan.dropped.contains(k) {
            let n = graph.nodes[k]
            guard let out = n.outputs.first, !out.isEmpty, n.outputs.count == 1, !scan.outputs.contains(out) else { continue }
            guard let fold = try foldedDecoding(n, scan) else { continue }
            if let bits = fold.codeBits { scan.codeBits[out] = bits }
            for c in fold.consumed { graph.removeConstant(named: c) }
            graph.setConstant(Constant(name: out, encoding: fold.encoding))
            scan.dropped.insert(k)
            scan.dropped.formUnion(fold.chain)
        }
        if !scan.dropped.isEmpty { graph.nodes = graph.nodes.enumerated().filter { !scan.dropped.contains($0.offset) }.map(\.element) }
    }

    // MARK: Steps of foldWeightDecoding

    /// The fold of node `n`'s decoding pattern, or nil when it matches none.
    private func foldedDecoding(_ n: Node, _ scan: WeightFoldScan) throws -> WeightFold? {
        switch n.opType {
        case "Reshape": return foldedReshape(n, scan)
        case "Cast": return foldedCast(n, scan)
        case "DequantizeLinear":
            guard let encoding = try dequantized(n, bits: { scan.codeBits[$0] }) else { return nil }
            return WeightFold(encoding: encoding,
                              consumed: n.inputs.filter { !$0.isEmpty && scan.only($0) && graph.isConstant($0) })
        case "Add": return foldedBiasAdd(n, scan)
        case "Gather": return foldedPaletteGather(n, scan)
        default: return nil
        }
    }

    /// A constant's tensor, when it is stored dense.
    private func denseConstant(_ name: String?) -> Tensor? {
        guard let name, case .dense(let t)? = graph.constant(named: name)?.encoding else { return nil }
        return t
    }

    /// A dense integer constant's values.
    private func integerConstant(_ name: String?) -> [Int64]? {
        denseConstant(name).flatMap { $0.dtype.isInteger ? $0.ints : nil }
    }

    /// The node producing `value` when it is an `op` read only there and not yet folded.
    private func soleProducer(of value: String?, _ op: String, _ scan: WeightFoldScan) -> (Int, Node)? {
        guard let value, scan.only(value), let k = scan.producer[value], !scan.dropped.contains(k),
              graph.nodes[k].opType == op else { return nil }
        return (k, graph.nodes[k])
    }

    /// Reshape: bit-packed codes unpacked by the writer's op chain, or a
    /// compressed constant reshaped.
    private func foldedReshape(_ n: Node, _ scan: WeightFoldScan) -> WeightFold? {
        let ints = integerConstant, only = scan.only
        if let u = unpackedCodes(n, scan) {
            let shape = GraphBuilder.resolveReshape([u.codes.count], ints(n.input(1))?.map { Int(clamping: $0) } ?? []) ?? [u.codes.count]
            return WeightFold(encoding: .dense(Tensor(ints: u.codes, shape: shape, dtype: .int64)),
                              consumed: u.constants, chain: u.nodes, codeBits: u.bits)
        }
        guard let x = n.input(0), only(x), let c = graph.constant(named: x), c.encoding.isCompressed,
              let sn = n.input(1), only(sn), let dims = ints(sn), n.int("allowzero", 0) == 0,
              let target = GraphBuilder.resolveReshape(c.encoding.shape, dims.map { Int(clamping: $0) }),
              let r = (try? c.encoding.reshaped(target)) ?? GraphBuilder.splittingBlockedAxis(c.encoding, target) else { return nil }
        return WeightFold(encoding: r, consumed: [x, sn])
    }

    /// Codes unpacked from `rows × b` packed bytes by the writer's op chain ending at `n` (a Reshape).
    private func unpackedCodes(_ n: Node, _ scan: WeightFoldScan) -> (codes: [Int64], bits: Int, nodes: [Int], constants: [String])? {
        let ints = integerConstant, dense = denseConstant, only = scan.only
        func from(_ value: String?, _ op: String) -> (Int, Node)? { soleProducer(of: value, op, scan) }
        guard let target = ints(n.input(1)), only(n.input(1)) else { return nil }
        var nodes: [Int] = [], constants = [n.input(1) ?? ""]
        var value = n.input(0)
        var count: Int? = nil
        if let (k, slice) = from(value, "Slice") {
            guard slice.inputs.count == 3, ints(slice.input(1)) == [0], let end = ints(slice.input(2)), end.count == 1,
                  only(slice.input(1)), only(slice.input(2)) else { return nil }
            count = Int(clamping: end[0]); nodes.append(k); constants += [slice.inputs[1], slice.inputs[2]]
            value = slice.input(0)
        }
        guard let (k1, flat) = from(value, "Reshape"), only(flat.input(1)), let flatShape = ints(flat.input(1)), flatShape.count == 1,
              let (k2, mod) = from(flat.input(0), "Mod"), mod.int("fmod", 0) == 0, only(mod.input(1)), let m = ints(mod.input(1)), m.count == 1,
              let (k3, div) = from(mod.input(0), "Div"), only(div.input(1)), let shifts = ints(div.input(1)),
              let (k4, mul) = from(div.input(0), "MatMul"), only(mul.input(1)), let weights = ints(mul.input(1)),
              dense(mul.input(1))?.shape == [weights.count, 1],
              let (k6, cast) = from(mul.input(0), "Cast"), cast.int("to", 0) == DType.int64.onnxDataType,
              only(cast.input(0)), let packedT = dense(cast.input(0)), packedT.dtype == .uint8, packedT.rank == 2,
              let packed = packedT.ints else { return nil }
        let bits = packedT.shape[1], rows = packedT.shape[0]
        guard (1...7).contains(bits), m == [Int64(1) << bits], weights == (0..<bits).map({ Int64(1) << (8 * $0) }),
              shifts == (0..<8).map({ Int64(1) << (bits * $0) }), flatShape == [Int64(rows * 8)],
              let shape = GraphBuilder.resolveReshape([count ?? rows * 8], target.map { Int(clamping: $0) }) else { return nil }
        let n = shape.reduce(1, *)
        guard n == (count ?? rows * 8), n <= rows * 8,
              let codes = BitPacking.unpack(packed.map { UInt8(truncatingIfNeeded: $0) }, bits: bits, count: n, order: .lsbFirst)
        else { return nil }
        nodes += [k1, k2, k3, k4, k6]
        constants += [flat.inputs[1], mod.inputs[1], div.inputs[1], mul.inputs[1], cast.inputs[0]]
        return (codes.map(Int64.init), bits, nodes, constants)
    }

    /// Cast of a float16 constant to float (→ fp16), or of unpacked codes to uint8 (→ the codes).
    private func foldedCast(_ n: Node, _ scan: WeightFoldScan) -> WeightFold? {
        guard let x = n.input(0), scan.only(x), let t = denseConstant(x) else { return nil }
        let to = n.int("to", 0)
        if to == DType.float32.onnxDataType, t.dtype == .float16, let f = t.floats,
           let h = try? Float16Weights(shape: t.shape, bits: f.map(Half.bits(from:))) {
            return WeightFold(encoding: .float16(h), consumed: [x])
        } else if to == DType.uint8.onnxDataType, let bits = scan.codeBits[x], let v = t.ints, v.allSatisfy({ (0...255).contains($0) }) {
            return WeightFold(encoding: .dense(Tensor(ints: v, shape: t.shape, dtype: .uint8)), consumed: [x], codeBits: bits)
        }
        return nil
    }

    /// Add of an affine weight and a constant bias: one bias per scale block,
    /// given directly or expanded to the weight by Expand · Reshape [· Slice].
    private func foldedBiasAdd(_ n: Node, _ scan: WeightFoldScan) -> WeightFold? {
        let ints = integerConstant, dense = denseConstant, only = scan.only
        func from(_ value: String?, _ op: String) -> (Int, Node)? { soleProducer(of: value, op, scan) }
        guard let a = n.input(0), only(a), case .affine(let w)? = graph.constant(named: a)?.encoding,
              let bn = n.input(1), only(bn) else { return nil }
        if let bt = dense(bn), bt.dtype == .float32, let bv = bt.floats, let biased = GraphBuilder.addingBias(w, bv, shape: bt.shape) {
            return WeightFold(encoding: .affine(biased), consumed: [a, bn])
        }
        // One bias per block, expanded to the weight: Expand · Reshape [· Slice].
        var value: String? = bn
        var steps: [Int] = [], used: [String] = [a]
        if let (ks, slice) = from(value, "Slice") {
            guard slice.inputs.count == 4, ints(slice.input(1)) == [0], only(slice.input(1)), only(slice.input(2)),
                  only(slice.input(3)), ints(slice.input(2)) != nil, ints(slice.input(3)) != nil else { return nil }
            steps.append(ks); used += Array(slice.inputs[1...3]); value = slice.input(0)
        }
        let blocked = w.shape.indices.filter { w.blockShape[$0] > 1 && w.blockShape[$0] < w.shape[$0] }
        guard blocked.count == 1, let (kr, r) = from(value, "Reshape"), only(r.input(1)), ints(r.input(1)) != nil,
              let (ke, expand) = from(r.input(0), "Expand"), only(expand.input(0)), only(expand.input(1)),
              let bt = dense(expand.input(0)), bt.dtype == .float32, let bv = bt.floats, bv.count == w.bias.count,
              let target = ints(expand.input(1)), target.count == bt.rank else { return nil }
        let differ = (0..<bt.rank).filter { Int64(bt.shape[$0]) != target[$0] }
        guard differ.count == 1, bt.shape[differ[0]] == 1, target[differ[0]] == Int64(w.blockShape[blocked[0]]),
              let biased = try? AffineWeights(shape: w.shape, bits: w.bits, signed: w.signed, q: w.q, blockShape: w.blockShape,
                                              scale: w.scale, bias: zip(w.bias, bv).map { $0 + $1 }) else { return nil }
        steps += [kr, ke]; used += [r.inputs[1], expand.inputs[0], expand.inputs[1]]
        return WeightFold(encoding: .affine(biased), consumed: used, chain: steps)
    }

    /// Gather from a float table by constant codes ([Cast(codes → int)] [+ group
    /// offsets]) → a palette.
    private func foldedPaletteGather(_ n: Node, _ scan: WeightFoldScan) -> WeightFold? {
        let dense = denseConstant, only = scan.only
        func from(_ value: String?, _ op: String) -> (Int, Node)? { soleProducer(of: value, op, scan) }
        guard n.int("axis", 0) == 0, let lutName = n.input(0), only(lutName), let lut = dense(lutName),
              lut.dtype == .float32, lut.rank == 1, let table = lut.floats, let idx = n.input(1), only(idx) else { return nil }
        var value = idx
        var offsets: (values: [Int64], shape: [Int])? = nil
        var steps: [Int] = [], used: [String] = [lutName]
        if let (ka, add) = from(value, "Add"), let a = add.input(0), let on = add.input(1) {
            if only(on), let o = dense(on), let ov = o.ints {
                offsets = (ov, o.shape); used.append(on)
            } else if let r = rangeOffsets(on, scan) {
                offsets = (r.values, r.shape); used += r.constants; steps += r.nodes
            } else { return nil }
            steps.append(ka)
            value = a
        }
        if let (kc, cast) = from(value, "Cast"), [6, 7].contains(cast.int("to", 0)), let c = cast.input(0) {
            steps.append(kc); value = c
        }
        guard only(value), let codes = dense(value), codes.dtype.isInteger, let iv = codes.ints,
              let pal = GraphBuilder.palette(indices: iv, shape: codes.shape, table: table, offsets: offsets) else { return nil }
        return WeightFold(encoding: .palette(pal), consumed: used + [value], chain: steps)
    }

    /// Group offsets made by Range · Div · Mul · Reshape from scalars (as the writer does).
    private func rangeOffsets(_ value: String?, _ scan: WeightFoldScan) -> (values: [Int64], shape: [Int], nodes: [Int], constants: [String])? {
        let ints = integerConstant, only = scan.only
        func from(_ value: String?, _ op: String) -> (Int, Node)? { soleProducer(of: value, op, scan) }
        guard let (k1, r) = from(value, "Reshape"), only(r.input(1)), let dims = ints(r.input(1)),
              let (k2, mul) = from(r.input(0), "Mul"), only(mul.input(1)), let e = ints(mul.input(1)), e.count == 1,
              e[0] >= 0, e[0] <= 1 << 8,
              let (k3, div) = from(mul.input(0), "Div"), only(div.input(1)), let g = ints(div.input(1)), g.count == 1, g[0] > 0,
              let (k4, range) = from(div.input(0), "Range"), ints(range.input(0)) == [0], ints(range.input(2)) == [1],
              let limit = ints(range.input(1)), limit.count == 1, (1...(1 << 24)).contains(limit[0]),
              only(range.input(0)), only(range.input(1)), only(range.input(2)) else { return nil }
        let values = (0..<limit[0]).map { ($0 / g[0]) * e[0] }
        guard let shape = GraphBuilder.resolveReshape([values.count], dims.map { Int(clamping: $0) }) else { return nil }
        return (values, shape, [k1, k2, k3, k4],
                [r.inputs[1], mul.inputs[1], div.inputs[1], range.inputs[0], range.inputs[1], range.inputs[2]])
    }

    /// DequantizeLinear of constant codes, scales and zero points → an affine
    /// weight (or, for codes wider than 8 bits, the float values); nil when an
    /// input is computed. `bits` gives the stored width of narrow codes.
    func dequantized(_ n: Node, bits: (String) -> Int?) throws -> WeightEncoding? {
        let loc = location(dequantizePlaces[n.outputs.first ?? ""] ?? "node '\(n.label)' (DequantizeLinear)")
        guard let xName = n.input(0), let sName = n.input(1) else {
            throw ImportError.malformed(loc, reason: "DequantizeLinear needs x and x_scale")
        }
        guard case .dense(let x)? = graph.constant(named: xName)?.encoding,
              case .dense(let st)? = graph.constant(named: sName)?.encoding else { return nil }
        var zt: Tensor? = nil
        if let z = n.input(2) {
            guard case .dense(let t)? = graph.constant(named: z)?.encoding else { return nil }
            zt = t
        }
        guard let q = x.ints, x.dtype.isInteger else {
            throw ImportError.malformed(loc, reason: "x is \(x.dtype), DequantizeLinear needs integer codes")
        }
        guard let scale = st.floats, st.dtype.isFloatingPoint else {
            throw ImportError.malformed(loc, reason: "x_scale is \(st.dtype), not a float")
        }
        if let bad = scale.firstIndex(where: { !$0.isFinite }) {
            throw ImportError.badTensor(loc, reason: "x_scale[\(bad)] is \(scale[bad])")
        }
        let shape = x.shape
        let blockShape: [Int]
        do {
            blockShape = try AffineWeights.dequantizeLinearBlockShape(x: shape, scale: st.shape, axis: n.int("axis", 1),
                                                                      blockSize: n.int("block_size", 0))
        } catch { throw ImportError.malformed(loc, reason: error.reason) }
        var zero = [Int64](repeating: 0, count: scale.count)
        if let zt {
            guard let z = zt.ints, zt.count == scale.count, zt.dtype == x.dtype else {
                throw ImportError.malformed(loc, reason: "x_zero_point (\(zt.dtype) \(zt.shape)) does not match x_scale \(st.shape) and x's type \(x.dtype)")
            }
            zero = z
        }
        if x.dtype == .int8 || x.dtype == .uint8 {
            let width = bits(xName) ?? 8
            let signed = x.dtype == .int8
            // Stored codes of a narrower width fit it; zero points may not (then 8-bit).
            let fits = zero.allSatisfy { AffineWeights.codeRange(bits: width, signed: signed).contains(Int($0)) }
            let bias = zip(scale, zero).map { Float(-Double($0) * Double($1)) }
            if let a = try? AffineWeights(shape: shape, bits: fits ? width : 8, signed: signed, q: q.map { Int16($0) },
                                          blockShape: blockShape, scale: scale, bias: bias) {
                return .affine(a)
            }
        }
        // Wider codes: the values themselves.
        var values = [Float](repeating: 0, count: q.count)
        BlockRuns(shape: shape, blockShape: blockShape).forEach { range, s in
            for i in range { values[i] = Float((Double(q[i]) - Double(zero[s])) * Double(scale[s])) }
        }
        return .dense(Tensor(values, shape: shape))
    }

    /// An affine weight whose last axis holds blocks of whole trailing
    /// slices (the writer's merged view [.., D·inner] with blocks of B·inner)
    /// reshaped back to [.., D, trailing…] with blocks of B.
    static func splittingBlockedAxis(_ e: WeightEncoding, _ target: [Int]) -> WeightEncoding? {
        guard case .affine(let a) = e, let k = a.shape.indices.last, target.count > a.shape.count,
              Array(target[..<k]) == Array(a.shape[..<k]) else { return nil }
        let inner = target[(k + 1)...].reduce(1, *)
        guard inner > 0, a.blockShape[k] % inner == 0, target[k] * inner == a.shape[k] else { return nil }
        let blockShape = Array(a.blockShape[..<k]) + [a.blockShape[k] / inner] + Array(target[(k + 1)...])
        return (try? AffineWeights(shape: target, bits: a.bits, signed: a.signed, q: a.q, blockShape: blockShape,
                                   scale: a.scale, bias: a.bias)).map { .affine($0) }
    }

    /// ONNX Reshape's target (0 copies the input's dimension, −1 is inferred).
    static func resolveReshape(_ from: [Int], _ dims: [Int]) -> [Int]? {
        guard from.allSatisfy({ $0 >= 0 }), let total = checkedElementCount(from) else { return nil }
        var out: [Int] = []
        var infer: Int? = nil
        for (i, d) in dims.enumerated() {
            if d == 0 { guard i < from.count else { return nil }; out.append(from[i]) }
            else if d == -1 { guard infer == nil else { return nil }; infer = i; out.append(1) }
            else if d > 0 { out.append(d) } else { return nil }
        }
        guard let known = checkedElementCount(out), known > 0 || infer == nil else { return nil }
        if let i = infer { guard known > 0, total % known == 0 else { return nil }; out[i] = total / known }
        return out.reduce(1, *) == total ? out : nil
    }

    /// The affine weight plus a constant that is the same within each of its
    /// scale blocks (a scalar, or [d, 1, …] along its one varying axis).
    static func addingBias(_ w: AffineWeights, _ b: [Float], shape bshape: [Int]) -> AffineWeights? {
        guard bshape.count <= w.shape.count, b.allSatisfy(\.isFinite) else { return nil }
        let varying = w.shape.indices.filter { w.blockShape[$0] < w.shape[$0] }
        var add: [Float]
        if b.count == 1 {
            add = [Float](repeating: b[0], count: w.bias.count)
        } else {
            guard varying.count == 1, w.blockShape[varying[0]] == 1 else { return nil }
            let k = varying[0]
            // Right-aligned broadcast: b's dims are 1 except the one lined up with axis k.
            let lead = w.shape.count - bshape.count
            guard k >= lead, b.count == w.shape[k] else { return nil }
            for (j, d) in bshape.enumerated() where d != 1 && j + lead != k { return nil }
            add = b
        }
        let bias = zip(w.bias, add).map { $0 + $1 }
        return try? AffineWeights(shape: w.shape, bits: w.bits, signed: w.signed, q: w.q, blockShape: w.blockShape,
                                  scale: w.scale, bias: bias)
    }

    /// Indices into tables laid end to end (group g's table at g · 2^bits,
    /// chosen by `offsets` of shape [d, 1, …] along one axis) → a palette.
    static func palette(indices: [Int64], shape: [Int], table: [Float], offsets: (values: [Int64], shape: [Int])?) -> PaletteWeights? {
        guard !table.isEmpty, indices.allSatisfy({ $0 >= 0 && $0 < 256 }) else { return nil }
        var groups = 1, axis = 0, groupSize = max(shape.first ?? 1, 1)
        if let offsets {
            let o = offsets.values
            guard offsets.shape.count >= 1, offsets.shape.count <= shape.count else { return nil }
            axis = shape.count - offsets.shape.count
            guard offsets.shape[0] == shape[axis], offsets.shape.dropFirst().allSatisfy({ $0 == 1 }), let first = o.first, first == 0 else { return nil }
            groupSize = o.prefix { $0 == 0 }.count
            groups = (o.count + groupSize - 1) / groupSize
            guard table.count % groups == 0 else { return nil }
            let entries = Int64(table.count / groups)
            for (c, v) in o.enumerated() where v != Int64(c / groupSize) * entries { return nil }
        } else if !shape.isEmpty {
            groupSize = shape[0]
        }
        let entries = table.count / groups
        guard indices.allSatisfy({ $0 < entries }) else { return nil }
        var bits = 1
        while (1 << bits) < entries { bits += 1 }
        guard bits <= 8 else { return nil }
        let size = 1 << bits
        let luts = (0..<groups).map { g in Array(table[(g * entries)..<((g + 1) * entries)]) + [Float](repeating: 0, count: size - entries) }
        return try? PaletteWeights(shape: shape, bits: bits, indices: indices.map { UInt8($0) }, lut: luts,
                                   axis: axis, groupSize: max(groupSize, 1))
    }
}

/// What `foldWeightDecoding` knows while it folds: how often each value is
/// read (graph outputs and inputs count twice, so they are never folded
/// away), which node makes each value, the nodes folded so far, and the
/// width of codes stored in fewer than 8 bits.
private struct WeightFoldScan {
    var uses: [String: Int] = [:]
    let outputs: Set<String>
    var producer: [String: Int] = [:]
    var dropped = Set<Int>()
    /// Constants whose integer codes were stored in fewer than 8 bits, with that width.
    var codeBits: [String: Int] = [:]

    init(_ graph: Graph, fourBitConstants: Set<String>) {
        for n in graph.nodes { for i in n.readNames { uses[i, default: 0] += 1 } }  // subgraph captures are reads too
        // Graph outputs, and initializers an old file also lists as inputs, are never folded away.
        for v in graph.outputs + graph.inputs { uses[v.name, default: 0] += 2 }
        outputs = Set(graph.outputs.map(\.name))
        for (k, n) in graph.nodes.enumerated() { for o in n.outputs where !o.isEmpty { producer[o] = k } }
        for c in fourBitConstants { codeBits[c] = 4 }
    }

    /// True when `name` is read by one node only (and is no graph output or input).
    func only(_ name: String?) -> Bool { name.map { uses[$0] == 1 } ?? false }
}

/// One folded decoding: the encoding that becomes the node's output, the
/// constants it consumes, the other nodes of its op chain, and the stored
/// width of the codes it yields (when narrower than 8 bits).
private struct WeightFold {
    var encoding: WeightEncoding
    var consumed: [String]
    var chain: [Int] = []
    var codeBits: Int? = nil
}
