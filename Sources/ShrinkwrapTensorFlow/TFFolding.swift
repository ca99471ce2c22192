import ShrinkwrapIR

/// Integer and boolean arithmetic on values known at import — loop counters,
/// trip counts, shape arithmetic — done by `TFContext.emit` instead of
/// emitting a node, so that a While's condition is known when it is unrolled.
/// Only small integer / boolean tensors are folded; floating-point math stays
/// in the graph as the model wrote it.
enum TFFolding {
    /// Largest tensor folded (elements).
    static let limit = 64

    /// The result of `opType` on known inputs, or nil when it is not folded here.
    static func fold(_ opType: String, _ inputs: [Tensor], _ attrs: [String: Attribute]) -> Tensor? {
        guard let a = inputs.first, inputs.allSatisfy({ $0.storage.count <= limit && $0.floats == nil }) else { return nil }
        switch opType {
        case "Identity":
            return a
        case "Neg", "Abs":
            guard inputs.count == 1, let v = a.ints else { return nil }
            return Tensor(ints: v.map { opType == "Neg" ? 0 &- $0 : ($0 < 0 ? 0 &- $0 : $0) }, shape: a.shape, dtype: a.dtype)
        case "Not":
            guard inputs.count == 1, let v = a.bools else { return nil }
            return Tensor(bools: v.map { !$0 }, shape: a.shape)
        case "Cast":
            guard inputs.count == 1, case .int(let code)? = attrs["to"], let to = DType(onnxDataType: code) else { return nil }
            return cast(a, to)
        case "Add", "Sub", "Mul", "Min", "Max":
            guard inputs.count == 2, let x = a.ints, let y = inputs[1].ints, let shape = broadcast(a, inputs[1]) else { return nil }
            let f: (Int64, Int64) -> Int64
            switch opType {
            case "Add": f = (&+)
            case "Sub": f = (&-)
            case "Mul": f = (&*)
            case "Min": f = { Swift.min($0, $1) }
            default: f = { Swift.max($0, $1) }
            }
            return cast(Tensor(ints: zipped(x, y, f), shape: shape, dtype: .int64), a.dtype)
        case "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Equal":
            guard inputs.count == 2, let x = a.ints, let y = inputs[1].ints, let shape = broadcast(a, inputs[1]) else { return nil }
            let f: (Int64, Int64) -> Bool
            switch opType {
            case "Less": f = (<)
            case "Greater": f = (>)
            case "LessOrEqual": f = (<=)
            case "GreaterOrEqual": f = (>=)
            default: f = (==)
            }
            return Tensor(bools: zipped(x, y, f), shape: shape)
        case "And", "Or":
            guard inputs.count == 2, let x = a.bools, let y = inputs[1].bools, let shape = broadcast(a, inputs[1]) else { return nil }
            return Tensor(bools: zipped(x, y, opType == "And" ? { $0 && $1 } : { $0 || $1 }), shape: shape)
        default:
            return nil
        }
    }

    /// Equal shapes, or one side with one element and no more axes than the other.
    static func broadcast(_ a: Tensor, _ b: Tensor) -> [Int]? {
        if a.shape == b.shape { return a.shape }
        if a.count == 1 && a.rank <= b.rank { return b.shape }
        if b.count == 1 && b.rank <= a.rank { return a.shape }
        return nil
    }

    static func zipped<T, R>(_ x: [T], _ y: [T], _ f: (T, T) -> R) -> [R] {
        let n = max(x.count, y.count)
        return (0..<n).map { f(x[x.count == 1 ? 0 : $0], y[y.count == 1 ? 0 : $0]) }
    }

    /// Integer / boolean conversions (narrower integers wrap, as TensorFlow's do); nil for other types.
    static func cast(_ t: Tensor, _ to: DType) -> Tensor? {
        let v: [Int64]
        switch t.storage {
        case .int(let a): v = a
        case .bool(let a): v = a.map { $0 ? 1 : 0 }
        case .float: return nil
        }
        if to == .bool { return Tensor(bools: v.map { $0 != 0 }, shape: t.shape) }
        guard to.isInteger else { return nil }
        return Tensor(ints: v.map(to.wrap), shape: t.shape, dtype: to)
    }
}
