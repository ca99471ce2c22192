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
        var remove = Set<Int>()
        for (pi, pad) in graph.nodes.enumerated() where pad.opType == "Pad" && pad.outputs.count == 1 {
            guard let y = pad.outputs.first, r[y] == 1, let ci = reader[y], let w = graph.nodes[ci].input(1),
                  let rank = graph.constant(named: w)?.encoding.shape.count, rank >= 3,
                  let spatial = zeroSpatialPads(pad, rank: rank) else { continue }
            var conv = graph.nodes[ci]
            if case .string(let a)? = conv.attributes["auto_pad"], a != "NOTSET" { continue }
            var pads = [Int](repeating: 0, count: 2 * (rank - 2))
            if let a = conv.attributes["pads"] {
                guard case .ints(let v) = a, v.count == pads.count else { continue }
                pads = v
            }
            conv.attributes["pads"] = .ints(zip(pads, spatial).map { $0 + $1 })
            conv.inputs[0] = pad.inputs[0]
            graph.nodes[ci] = conv
            remove.insert(pi)
        }
        if !remove.isEmpty {
            graph.nodes = graph.nodes.enumerated().filter { !remove.contains($0.offset) }.map(\.element)
        }
    }

    /// The Conv-style pads (begins then ends of the spatial axes 2…) of a constant-mode Pad of a
    /// rank-`rank` value with a zero (or absent) fill, nothing on axes 0 and 1, none negative.
    func zeroSpatialPads(_ pad: Node, rank: Int) -> [Int]? {
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
        guard begin.allSatisfy({ $0 >= 0 }), end.allSatisfy({ $0 >= 0 }), begin[0] == 0, begin[1] == 0, end[0] == 0, end[1] == 0
        else { return nil }
        return Array(begin[2...]) + Array(end[2...])
    }
}
