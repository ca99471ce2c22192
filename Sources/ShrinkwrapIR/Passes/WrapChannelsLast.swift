extension LoweringPass {
    /// Every node of `ops` whose image (input 0) and only output are rank 4
    /// computes in NHWC: it becomes `prefix + op` between a Transpose to NHWC
    /// and one back. `sinkTransposes` then removes the pairs it can.
    public static func wrapChannelsLast(ops: Set<String>, prefix: String) -> LoweringPass {
        LoweringPass("wrap-channels-last", "layout-sensitive ops on rank-4 images → \(prefix)op between Transposes to NHWC and back") { g in
            var out: [Node] = []
            for n in g.nodes {
                guard ops.contains(n.opType), let x = n.input(0), let xs = g.shapes[x], xs.count == 4,
                      n.outputs.count == 1, let y = n.outputs.first, let ys = g.shapes[y], ys.count == 4 else {
                    out.append(n)
                    continue
                }
                let xt = g.fresh(x + "_nhwc"), yt = g.fresh(y + "_nhwc")
                g.shapes[xt] = Permutation.apply(Permutation.toNHWC, to: xs)
                g.shapes[yt] = Permutation.apply(Permutation.toNHWC, to: ys)
                g.dtypes[xt] = g.dtypes[x]
                g.dtypes[yt] = g.dtypes[y]
                out.append(Node(name: g.fresh(n.name + "_to_nhwc"), opType: "Transpose", inputs: [x], outputs: [xt],
                                attributes: ["perm": .ints(Permutation.toNHWC)]))
                var m = n
                m.opType = prefix + n.opType
                m.inputs[0] = xt
                m.outputs = [yt]
                out.append(m)
                out.append(Node(name: g.fresh(n.name + "_to_nchw"), opType: "Transpose", inputs: [yt], outputs: [y],
                                attributes: ["perm": .ints(Permutation.toNCHW)]))
            }
            g.nodes = out
        }
    }
}
