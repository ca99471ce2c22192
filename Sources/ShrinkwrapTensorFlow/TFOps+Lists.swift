import ShrinkwrapIR
import TensorFlowSchema

/// A TensorList (TF2's TensorArray) while loops are unrolled: the tensor it
/// was made from, or the items set so far by index. Lists exist only at
/// import; the IR sees the items and the stacks made of them.
struct TFList {
    /// TensorListFromTensor's tensor: item i is its slice i on axis 0.
    var tensor: String?
    /// Items set by TensorListSetItem (or none yet, after TensorListReserve).
    var items: [Int: String] = [:]
    /// The declared number of elements, when known.
    var count: Int?

    /// Most elements a list may declare.
    static let maxCount = 1 << 20
}

extension TFOps {
    static let lists: [String: Translator] = [
        "TensorListReserve": { c, op in
            try c.arity(op, 2)
            var list = TFList()
            if let n = c.known(op, 1)?.ints, n.count == 1, n[0] >= 0 {
                guard n[0] <= TFList.maxCount else { throw c.unsupported(op, "a TensorList of \(n[0]) elements") }
                list.count = Int(n[0])
            }
            let name = c.output(op)
            c.lists[name] = list
        },
        "TensorListFromTensor": { c, op in
            try c.arity(op, 1)
            let list = TFList(tensor: try c.input(op, 0)), name = c.output(op)
            c.lists[name] = list
        },
        "TensorListGetItem": { c, op in
            try c.arity(op, 2)
            let list = try c.list(op, 0), i = try index(&c, op, list)
            if let item = list.items[i] { return c.alias(op, 0, to: item) }
            guard let t = list.tensor else { throw c.unsupported(op, "reads item \(i) of a TensorList before it is set") }
            let at = c.constant(.scalar(int: Int64(i)), name: op.name + "_index")
            c.emit("Gather", [t, at], [c.output(op)], ["axis": .int(0)])
        },
        "TensorListSetItem": { c, op in
            try c.arity(op, 3)
            var list = try c.list(op, 0)
            let i = try index(&c, op, list)
            guard list.tensor == nil else { throw c.unsupported(op, "setting an item of a TensorList made from a tensor") }
            list.items[i] = try c.input(op, 2)
            let name = c.output(op)
            c.lists[name] = list
        },
        "TensorListStack": { c, op in
            try c.arity(op, 1)
            let list = try c.list(op, 0)
            if let t = list.tensor { return c.alias(op, 0, to: t) }
            let n = list.count ?? ((list.items.keys.max() ?? -1) + 1)
            guard n > 0 else { throw c.unsupported(op, "stacking an empty TensorList") }
            let axis = c.int64s([0], name: op.name + "_axis")
            let rows = try (0..<n).map { i -> String in
                guard let item = list.items[i] else { throw c.unsupported(op, "stacking a TensorList whose item \(i) is never set") }
                return c.apply("Unsqueeze", [item, axis], base: op.name + "_row")
            }
            if rows.count == 1 { return c.emit("Identity", rows, [c.output(op)]) }
            c.emit("Concat", rows, [c.output(op)], ["axis": .int(0)])
        },
        "TensorListLength": { c, op in
            try c.arity(op, 1)
            let list = try c.list(op, 0)
            guard let n = list.count ?? (list.tensor == nil ? (list.items.keys.max() ?? -1) + 1 : nil) else {
                throw c.unsupported(op, "the length of a TensorList made from a tensor")
            }
            let length = c.constant(.scalar(int: Int64(n), dtype: .int32), name: op.name)
            c.alias(op, 0, to: length)
        },
    ]

    /// Input 1 of a list op: an index known at import, inside the list's declared length.
    static func index(_ c: inout TFContext, _ op: TFOp, _ list: TFList) throws -> Int {
        guard let t = c.known(op, 1), let v = t.ints, v.count == 1 else {
            throw c.unsupported(op, "a TensorList index computed at run time")
        }
        guard v[0] >= 0, v[0] < Int64(list.count ?? TFList.maxCount) else {
            throw c.malformed(op, "index \(v[0]) outside the TensorList\(list.count.map { " of \($0) elements" } ?? "")")
        }
        return Int(v[0])
    }
}
