import ShrinkwrapIR

// MARK: - Fitting a tensor to an input

extension InputData {
    /// The samples `t` gives for `info`: itself, or its slices along a leading batch axis.
    static func fit(_ t0: Tensor, to info: ValueInfo, file: String) throws -> [Tensor] {
        let t = try convert(t0, to: info, file: file)
        guard let dims = info.shape else { return [t] }
        func matches(_ shape: ArraySlice<Int>, _ dims: ArraySlice<Dim>) -> Bool {
            shape.count == dims.count && zip(shape, dims).allSatisfy { s, d in d.value.map { $0 == s } ?? true }
        }
        if matches(t.shape[...], dims[...]) { return [t] }
        if t.rank == dims.count + 1, matches(t.shape.dropFirst(), dims[...]) {
            return try split(t, sampleShape: Array(t.shape.dropFirst()), file: file)
        }
        if t.rank == dims.count, let first = dims.first, first == .fixed(1), matches(t.shape.dropFirst(), dims.dropFirst()) {
            return try split(t, sampleShape: [1] + t.shape.dropFirst(), file: file)
        }
        let batch = dims.first == .fixed(1)
            ? "[N, " + dims.dropFirst().map(\.description).joined(separator: ", ") + "]"
            : "[N, " + dims.map(\.description).joined(separator: ", ") + "]"
        throw Error("\(file): shape \(t.shape) does not fit input '\(info.name)' \(info.shapeDescription) (nor a batch \(batch))")
    }

    static func split(_ t: Tensor, sampleShape: [Int], file: String) throws -> [Tensor] {
        let n = t.shape.first ?? 0
        guard n > 0 else { throw Error("\(file): the batch axis of shape \(t.shape) holds no samples") }
        let per = sampleShape.reduce(1, *)
        var out: [Tensor] = []
        out.reserveCapacity(n)
        for k in 0..<n {
            let r = (k * per)..<((k + 1) * per)
            switch t.storage {
            case .float(let a): out.append(Tensor(dtype: t.dtype, shape: sampleShape, storage: .float(Array(a[r]))))
            case .int(let a): out.append(Tensor(dtype: t.dtype, shape: sampleShape, storage: .int(Array(a[r]))))
            case .bool(let a): out.append(Tensor(dtype: t.dtype, shape: sampleShape, storage: .bool(Array(a[r]))))
            }
        }
        return out
    }

    /// `t` as the input's dtype: float64 → float32 and int32 ↔ int64 are converted, other differences refused.
    public static func convert(_ t: Tensor, to info: ValueInfo, file: String) throws -> Tensor {
        guard let want = info.dtype, want != t.dtype else { return t }
        var out = t
        switch (t.dtype, want) {
        case (.float64, .float32), (.int32, .int64), (.float16, .float32), (.bfloat16, .float32):
            // float16 / bfloat16 widen exactly (a Core ML model declaring a float16 input runs in float32 here).
            out.dtype = want
        case (.int64, .int32):
            if let a = t.ints, let bad = a.firstIndex(where: { $0 < Int64(Int32.min) || $0 > Int64(Int32.max) }) {
                throw Error("\(file): value \(a[bad]) at index \(bad) does not fit input '\(info.name)' (int32)")
            }
            out.dtype = want
        default:
            throw Error("\(file): dtype \(t.dtype) does not match input '\(info.name)' (\(want))")
        }
        return out
    }
}
