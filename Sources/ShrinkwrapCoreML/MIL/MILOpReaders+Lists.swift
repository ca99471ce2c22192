import ShrinkwrapIR

/// MIL lists (what coremltools makes of TensorFlow's TensorArrays): make_list,
/// list_scatter, list_write, list_read, list_gather, list_length.
///
/// A MIL list is a value (each write makes a new list). The IR holds a list
/// whose length and element shape are fixed as one tensor [length, element…]:
/// make_list is zeros, a write a ScatterND of rows, a read a Gather on axis 0,
/// the length a constant. A list grows only where `dynamic_length` is set and
/// an index reaches past its length; such a list has no fixed length and is
/// refused ("a list with unbounded length"), as is a write at a computed index
/// into a list allowed to grow. coremltools 9.0 writes no list_stack (TF's
/// TensorListStack becomes list_gather).
extension MILOpReaders {
    static let lists: [String: MILOpReader] = [
        "make_list": { r in try r.makeList() },
        "list_scatter": { r in try r.listScatter() },
        "list_write": { r in try r.listWrite() },
        "list_read": { r in
            let (ls, l) = try r.listInput()
            let index = try r.listIndexTensor("index", try r.constantListIndices("index", of: l, reading: true), shape: nil)
            r.node("Gather", [ls, index], [r.out()], ["axis": .int(0)])
        },
        "list_gather": { r in
            let (ls, l) = try r.listInput()
            let indices = try r.listIndexTensor("indices", try r.constantListIndices("indices", of: l, reading: true), shape: nil)
            r.node("Gather", [ls, indices], [r.out()], ["axis": .int(0)])
        },
        "list_length": { r in
            let (_, l) = try r.listInput()
            r.literals[r.out()] = MILLiteral(type: .int32, shape: [], elements: .ints([Int64(l.length)]))
        },
    ]
}

/// What the importer knows of a list value: its fixed length, element shape and type.
struct MILList: Equatable {
    var length: Int
    var element: [Int]
    var dtype: DType
    /// make_list's dynamic_length: writes past the end would grow it.
    var dynamic: Bool

    var shape: [Int] { [length] + element }
}

extension MILReader {
    /// make_list: zeros of [init_length, elem_shape…].
    mutating func makeList() throws {
        if case .name(let n)? = bindings("init_length")?.first?.binding, literals[n] == nil, weights[n] == nil {
            throw refuse("a list with unbounded length (init_length is computed: '\(n)')")
        }
        let length = try int("init_length", 1)
        let dynamic = try bool("dynamic_length", true)
        guard let shapeBindings = bindings("elem_shape") else { throw refuse("a list without elem_shape") }
        var element: [Int] = []
        for b in shapeBindings {
            let l: MILLiteral?
            switch b.binding {
            case .name(let n)?: l = literals[n]
            case .value(let v)?: l = try literal(v, place: "\(place) input 'elem_shape'")
            case nil: l = nil
            }
            guard let l, let v = l.intValues, v.count == 1 else {
                throw refuse("a list whose elem_shape is not constant integers (a symbolic element shape)")
            }
            element.append(v[0])
        }
        let dtype: DType
        switch try string("dtype", "fp32") {
        case "fp16", "fp32": dtype = .float32
        case "int32": dtype = .int32
        case "bool": dtype = .bool
        case let d: throw refuse("a list of '\(d)' elements")
        }
        let list = MILList(length: length, element: element, dtype: dtype, dynamic: dynamic)
        guard length >= 0, element.allSatisfy({ $0 >= 0 }), checkedElementCount(list.shape, limit: 1 << 31) != nil else {
            throw bad("a list of shape \(list.shape)")
        }
        let zero: Tensor
        switch dtype {
        case .int32: zero = .scalar(int: 0, dtype: .int32)
        case .bool: zero = Tensor(bools: [false], shape: [])
        default: zero = .scalar(0)
        }
        let inputs = [constant(.dense(zero), "\(out())_zero"), ints(list.shape, "\(out())_shape")]
        node("Expand", inputs, [out()])
        emptyLists[out()] = inputs
        defineList(out(), list)
    }

    /// Drops the zeros of made lists nothing reads (a list_scatter of a whole tensor replaced them), with their constants.
    mutating func dropUnreadEmptyLists() {
        guard !emptyLists.isEmpty else { return }
        var read = Set(graph.outputs.map(\.name))
        for n in graph.nodes { read.formUnion(n.readNames) }
        let unread = emptyLists.filter { !read.contains($0.key) }
        graph.nodes.removeAll { $0.opType == "Expand" && $0.outputs.count == 1 && unread[$0.outputs[0]] != nil }
        for c in unread.values.joined() { graph.removeConstant(named: c) }
        emptyLists = [:]
    }

    /// list_scatter: rows `indices` of the list become `value`'s rows (the whole tensor when they are 0..<length).
    mutating func listScatter() throws {
        let (ls, l) = try listInput()
        let value = try x("value")
        let indices = try constantListIndices("indices", of: l, reading: false)
        if let s = shape(value), Array(s.dropFirst()) != l.element || indices.map({ $0.count != s.first }) == true {
            throw bad("value of shape \(s) for \(indices.map { "\($0.count) indices into " } ?? "")a list of \(l.element) elements")
        }
        if let c = indices, c.count == l.length, c.enumerated().allSatisfy({ $0.offset == $0.element }) {
            node("Identity", [value], [out()])
        } else {
            node("ScatterND", [ls, try listIndexTensor("indices", indices, shape: [indices?.count ?? -1, 1]), value], [out()])
        }
        defineList(out(), l)
    }

    /// list_write: row `index` of the list becomes `value`.
    mutating func listWrite() throws {
        let (ls, l) = try listInput()
        let value = try x("value")
        let index = try constantListIndices("index", of: l, reading: false)
        if let s = shape(value), s != l.element { throw bad("value of shape \(s) for a list of \(l.element) elements") }
        let update = temp("update")
        node("Unsqueeze", [value, ints([0], "\(out())_axes")], [update])
        node("ScatterND", [ls, try listIndexTensor("index", index, shape: [1, 1]), update], [out()])
        defineList(out(), l)
    }

    /// Input `ls`: the IR tensor holding the list, and what is known of it.
    mutating func listInput() throws -> (value: String, list: MILList) {
        guard let b = bindings("ls")?.first else { throw bad("no input 'ls'") }
        guard case .name(let n)? = b.binding else { throw bad("input 'ls' is not a list") }
        guard let l = lists[n] else {
            throw types[n] == nil ? bad("reads unknown value '\(n)'") : bad("input 'ls' ('\(n)') is not a list")
        }
        return (n, l)
    }

    /// The constant indices of input `key` into list `l`, checked against its length; nil when computed.
    /// A write past the end of a growing list, or at a computed index into one, is refused.
    func constantListIndices(_ key: String, of l: MILList, reading: Bool) throws -> [Int]? {
        guard let b = bindings(key)?.first else { throw bad("no input '\(key)'") }
        if case .name(let n)? = b.binding, literals[n] == nil, weights[n] == nil {
            if !reading && l.dynamic { throw refuse("a list with unbounded length (dynamic_length, written at a computed index)") }
            return nil
        }
        guard let indices = try intList(key) else { throw bad("no input '\(key)'") }
        for i in indices where i < 0 || i >= l.length {
            if !reading && l.dynamic { throw refuse("a list with unbounded length (index \(i) past its length \(l.length))") }
            throw bad("\(op.type) index \(i) outside the list's length \(l.length)")
        }
        return indices
    }

    /// Index input `key` as an IR value: `constant` as int64 (of its own shape, or `shape`), else the
    /// computed value (cast to int64 and reshaped to `shape` when one is given, for ScatterND).
    mutating func listIndexTensor(_ key: String, _ constant: [Int]?, shape s: [Int]?) throws -> String {
        if let constant {
            let own = try s ?? param(key)?.shape ?? [constant.count]
            return self.constant(.dense(Tensor(ints: constant.map(Int64.init), shape: own)), "\(out())_\(key)")
        }
        let v = try x(key)
        guard let s else { return v }
        let r = temp(key)
        node("Reshape", [try asInt64(v), ints(s, "\(out())_\(key)_shape")], [r])
        return r
    }

    /// Records that `name` holds list `l` (a tensor of its shape).
    mutating func defineList(_ name: String, _ l: MILList) {
        lists[name] = l
        types[name] = (l.dtype, l.shape)
    }
}
