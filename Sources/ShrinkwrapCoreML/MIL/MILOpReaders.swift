import ShrinkwrapIR

/// Reads one MIL operation (`MILReader.op`) into IR nodes.
typealias MILOpReader = (inout MILReader) throws -> Void

/// The MIL op readers, by MIL op type; one file per family
/// (`MILOpReaders+<Family>.swift`). Op semantics are coremltools 9.0's
/// (`converters/mil/mil/ops/defs/iOS15…iOS18`).
enum MILOpReaders {
    static let table: [String: MILOpReader] = {
        var t: [String: MILOpReader] = [:]
        for family in [values, elementwise, activations, reductions, convolution, normalization, linear, shapes, slicing,
                       indexing, recurrent, constexpr, misc, lists, controlFlow] {
            t.merge(family) { a, _ in a }
        }
        return t
    }()

    /// `const` and the ops that only pass a value through.
    static let values: [String: MILOpReader] = [
        "const": { r in try r.readConst() },
        "identity": { r in r.node("Identity", [try r.x()], [r.out()]) },
        "classify": { r in try r.classify() },
    ]
}

// MARK: - Constant parameters

extension MILReader {
    /// Integer parameter `key` (a scalar), `d` when absent.
    func int(_ key: String, _ d: Int) throws -> Int {
        guard let l = try param(key) else { return d }
        guard let v = l.intValues, v.count == 1 else { throw bad("input '\(key)' must be one integer") }
        return v[0]
    }

    /// Integer list parameter `key`, nil when absent.
    func intList(_ key: String) throws -> [Int]? {
        guard let l = try param(key) else { return nil }
        guard let v = l.intValues else { throw bad("input '\(key)' must be integers") }
        return v
    }

    func float(_ key: String, _ d: Float) throws -> Float {
        guard let l = try param(key) else { return d }
        guard let v = l.floatValues, v.count == 1 else { throw bad("input '\(key)' must be one number") }
        return v[0]
    }

    func floatList(_ key: String) throws -> [Float]? {
        guard let l = try param(key) else { return nil }
        guard let v = l.floatValues else { throw bad("input '\(key)' must be numbers") }
        return v
    }

    func bool(_ key: String, _ d: Bool) throws -> Bool {
        guard let l = try param(key) else { return d }
        guard let v = l.boolValues, v.count == 1 else { throw bad("input '\(key)' must be one bool") }
        return v[0]
    }

    func boolList(_ key: String) throws -> [Bool]? {
        guard let l = try param(key) else { return nil }
        guard let v = l.boolValues else { throw bad("input '\(key)' must be bools") }
        return v
    }

    func string(_ key: String, _ d: String) throws -> String {
        guard let l = try param(key) else { return d }
        guard let s = l.strings, s.count == 1 else { throw bad("input '\(key)' must be one string") }
        return s[0]
    }

    /// `a` as an axis of a rank-`rank` tensor (negative counts from the end).
    func axis(_ a: Int, rank: Int) throws -> Int {
        let v = a < 0 ? a + rank : a
        guard v >= 0, v < max(rank, 1) else { throw bad("axis \(a) outside rank \(rank)") }
        return v
    }

    /// The rank of `v`, which the reader needs.
    func needRank(_ v: String) throws -> Int {
        guard let r = rank(v) else { throw refuse("'\(v)' has no fixed shape declared, which this op needs") }
        return r
    }

    func needShape(_ v: String) throws -> [Int] {
        guard let s = shape(v) else { throw refuse("'\(v)' has no fixed shape declared, which this op needs") }
        return s
    }

    /// `const`: its value becomes a literal (and a constant when a tensor input reads it).
    mutating func readConst() throws {
        guard let v = op.attributes["val"] else { throw bad("a const without a 'val' attribute") }
        let l = try literal(v, place: place)
        if let s = types[out()]?.shape, s != l.shape { throw bad("the value has shape \(l.shape), the op declares \(s)") }
        literals[out()] = l
    }

    /// classify (a classifier's last op): the labels go into the metadata, the probabilities
    /// (output 1, a dictionary for Core ML) become a tensor output; the label (output 0) is derived.
    mutating func classify() throws {
        let probabilities = try x("probabilities")
        guard let b = bindings("classes")?.first else { throw bad("no input 'classes'") }
        var labels: [String] = []
        let value: MILValue
        switch b.binding {
        case .value(let v)?: value = v
        case .name(let n)?:
            guard let l = literals[n] else { throw refuse("classes computed by the program ('\(n)')") }
            labels = l.strings ?? (l.intValues ?? []).map(String.init)
            value = MILValue()
        case nil: throw bad("input 'classes' binds nothing")
        }
        if case .immediateValue(let i)? = value.value {
            switch i.value {
            case .list(let list)?:
                for item in list.values {
                    let t = item.immediateValue.tensor
                    if case .strings(let s)? = t.value { labels += s.values } else if case .longInts(let v)? = t.value { labels += v.values.map(String.init) }
                    else if case .ints(let v)? = t.value { labels += v.values.map(String.init) }
                }
            case .tensor(let t)?:
                if case .strings(let s)? = t.value { labels = s.values } else if case .longInts(let v)? = t.value { labels = v.values.map(String.init) }
            default: break
            }
        }
        guard !labels.isEmpty, op.outputs.count == 2 else { throw bad("a classify without labels or without its two outputs") }
        graph.metadata.labels = labels
        node("Identity", [probabilities], [out(1)])
        types[out(1)] = (.float32, shape(probabilities))
    }

    /// Output `i` cast to int32 when an IR op gives int64 where MIL declares int32.
    mutating func int32Output(_ op: String, _ inputs: [String], _ attributes: [String: Attribute] = [:], index: Int = 0) {
        let wide = temp("int64")
        node(op, inputs, [wide], attributes)
        node("Cast", [wide], [out(index)], ["to": .int(DType.int32.onnxDataType)])
    }
}
