import ShrinkwrapIR

/// Less frequent MIL ops that compose from IR ops: reverse, argsort, one_hot,
/// flatten2d, exp2, threshold, thresholded_relu, scaled_tanh.
extension MILOpReaders {
    static let misc: [String: MILOpReader] = [
        "reverse": { r in try r.reverse() },
        "argsort": { r in try r.argsort() },
        "one_hot": { r in try r.oneHot() },
        "flatten2d": { r in
            let x = try r.x()
            r.node("Flatten", [x], [r.out()], ["axis": .int(try r.axis(try r.int("axis", 1), rank: try r.needRank(x) + 1))])
        },
        "exp2": { r in r.node("Pow", [r.scalar(2, "\(r.out())_two"), try r.x()], [r.out()]) },
        // threshold: max(x, alpha).
        "threshold": { r in r.node("Max", [try r.x(), r.scalar(try r.float("alpha", 0), "\(r.out())_alpha")], [r.out()]) },
        "thresholded_relu": { r in r.node("ThresholdedRelu", [try r.x()], [r.out()], ["alpha": .float(try r.float("alpha", 1))]) },
        // scaled_tanh: alpha · tanh(beta · x).
        "scaled_tanh": { r in
            let inner = r.temp("scaled_x"), t = r.temp("tanh")
            r.node("Mul", [try r.x(), r.scalar(try r.float("beta", 1), "\(r.out())_beta")], [inner])
            r.node("Tanh", [inner], [t])
            r.node("Mul", [t, r.scalar(try r.float("alpha", 1), "\(r.out())_alpha")], [r.out()])
        },
    ]
}

extension MILReader {
    /// reverse: a Slice with step −1 on each axis named (every axis when absent).
    mutating func reverse() throws {
        let x = try self.x()
        let r = try needRank(x)
        let axes = try (intList("axes") ?? Array(0..<r)).map { try axis($0, rank: r) }
        guard !axes.isEmpty else { node("Identity", [x], [out()]); return }
        let n = axes.count
        func vector(_ v: [Int64], _ hint: String) -> String { constant(.dense(Tensor(ints: v, shape: [n])), "\(out())_\(hint)") }
        node("Slice", [x, vector(Array(repeating: -1, count: n), "starts"), vector(Array(repeating: Int64.min, count: n), "ends"),
                       vector(axes.map(Int64.init), "axes"), vector(Array(repeating: -1, count: n), "steps")], [out()])
    }

    /// argsort: the indices of a full TopK (descending unless ascending), as int32.
    mutating func argsort() throws {
        let x = try self.x()
        let s = try needShape(x)
        let a = try axis(try int("axis", -1), rank: s.count)
        let values = temp("sorted"), indices = temp("indices")
        node("TopK", [x, ints([s[a]], "\(out())_k")], [values, indices],
             ["axis": .int(a), "largest": .int(try bool("ascending", false) ? 0 : 1), "sorted": .int(1)])
        node("Cast", [indices], [out()], ["to": .int(DType.int32.onnxDataType)])
    }

    /// one_hot: OneHot with [off, on] values along `axis` (the new one).
    mutating func oneHot() throws {
        let indices = try x("indices")
        let r = try needRank(indices)
        let depth = try int("one_hot_vector_size", 0)
        guard depth > 0 else { throw refuse("one_hot needs a constant one_hot_vector_size") }
        let on = try float("on_value", 1), off = try float("off_value", 0)
        let a = try axis(try int("axis", -1), rank: r + 1)
        let values = constant(.dense(Tensor([off, on], shape: [2])), "\(out())_values")
        node("OneHot", [indices, ints([depth], "\(out())_depth"), values], [out()], ["axis": .int(a)])
    }
}
