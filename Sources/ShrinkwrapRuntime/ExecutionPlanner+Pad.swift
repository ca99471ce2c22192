import ShrinkwrapIR

extension ExecutionPlanner {
    // MARK: 2a. Pad + Conv

    /// A zero Pad of spatial axes only (what TFLite's ZeroPadding2D and explicit-padding exports
    /// leave in front of a stride-2 convolution) whose only reader is a Conv's input becomes that
    /// Conv's own padding: the Conv reads the zeros it would have read, without the padded copy.
    /// Values are equal; only the sign of an exact zero result can differ (an implicit pad skips a
    /// tap that an explicit one adds as w · 0).
    mutating func fusePadIntoConv() {
        let r = readers()
        var reader: [String: Int] = [:]
        for (i, n) in graph.nodes.enumerated() where n.opType == "Conv" { if let x = n.input(0) { reader[x] = i } }
        // A Transpose between the two (TFLite's NHWC Pad in front of the NCHW Conv the importer wraps):
        // the Transpose then reads the unpadded value and the Conv pads the permuted axes.
        var transposeReader: [String: Int] = [:]
        for (i, n) in graph.nodes.enumerated() where n.opType == "Transpose" && n.outputs.count == 1 {
            if let x = n.input(0), let y = n.outputs.first, r[y] == 1, reader[y] != nil { transposeReader[x] = i }
        }
        var remove = Set<Int>()
        for (pi, pad) in graph.nodes.enumerated() where pad.opType == "Pad" && pad.outputs.count == 1 {
            guard let y = pad.outputs.first, r[y] == 1 else { continue }
            var perm: [Int]? = nil, convInput = y
            if reader[y] == nil, let ti = transposeReader[y] {
                guard case .ints(let p)? = graph.nodes[ti].attributes["perm"], let out = graph.nodes[ti].outputs.first else { continue }
                perm = p
                convInput = out
            }
            guard let ci = reader[convInput], let w = graph.nodes[ci].input(1),
                  let rank = graph.constant(named: w)?.encoding.shape.count, rank >= 3,
                  let spatial = zeroSpatialPads(pad, rank: rank, permutation: perm) else { continue }
            var conv = graph.nodes[ci]
            if case .string(let a)? = conv.attributes["auto_pad"], a != "NOTSET" { continue }
            var pads = [Int](repeating: 0, count: 2 * (rank - 2))
            if let a = conv.attributes["pads"] {
                guard case .ints(let v) = a, v.count == pads.count else { continue }
                pads = v
            }
            conv.attributes["pads"] = .ints(zip(pads, spatial).map { $0 + $1 })
            if perm != nil, let ti = transposeReader[y] {
                graph.nodes[ti].inputs[0] = pad.inputs[0]
            } else {
                conv.inputs[0] = pad.inputs[0]
            }
            graph.nodes[ci] = conv
            remove.insert(pi)
        }
        if !remove.isEmpty {
            graph.nodes = graph.nodes.enumerated().filter { !remove.contains($0.offset) }.map(\.element)
        }
    }

    /// The Conv-style pads (begins then ends of the spatial axes 2…) of a constant-mode Pad of a
    /// rank-`rank` value with a zero (or absent) fill, nothing on axes 0 and 1, none negative; with
    /// `permutation`, of the Pad's output transposed by it (axis i of the Conv's input is axis
    /// permutation[i] of the Pad's).
    func zeroSpatialPads(_ pad: Node, rank: Int, permutation: [Int]? = nil) -> [Int]? {
        if case .string(let mode)? = pad.attributes["mode"], mode != "constant" { return nil }
        guard pad.attributes["pads"] == nil, let p = pad.input(1), let pt = graph.constant(named: p)?.encoding.decoded(),
              let values = pt.ints else { return nil }
        if let v = pad.input(2) {
            guard let t = graph.constant(named: v)?.encoding.decoded(), t.count == 1, t.floats?.first == 0 else { return nil }
        }
        var axes = Array(0..<rank)
        if let a = pad.input(3) {
            guard let t = graph.constant(named: a)?.encoding.decoded().ints else { return nil }
            axes = t.map { Int($0) < 0 ? Int($0) + rank : Int($0) }
        }
        guard values.count == 2 * axes.count, axes.allSatisfy({ (0..<rank).contains($0) }), Set(axes).count == axes.count
        else { return nil }
        var begin = [Int](repeating: 0, count: rank), end = begin
        for (i, a) in axes.enumerated() { begin[a] = Int(values[i]); end[a] = Int(values[axes.count + i]) }
        if let p = permutation {
            guard p.count == rank, Set(p) == Set(0..<rank) else { return nil }
            (begin, end) = (p.map { begin[$0] }, p.map { end[$0] })
        }
        guard begin.allSatisfy({ $0 >= 0 }), end.allSatisfy({ $0 >= 0 }), begin[0] == 0, begin[1] == 0, end[0] == 0, end[1] == 0
        else { return nil }
        return Array(begin[2...]) + Array(end[2...])
    }
}
