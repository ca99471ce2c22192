import ShrinkwrapIR
import ShrinkwrapRuntime

// Running several inputs of a compare in one interpreter run: the inputs stacked along axis 0,
// the outputs split back. Used only when it gives every input's outputs bit for bit.
extension AgreementRunner {
    /// Whether the first `count` inputs, stacked, give the reference outputs already computed one
    /// at a time, bit for bit: every runtime input declares a free axis 0, the samples agree on
    /// every input's shape, and each output splits into the per-input results.
    func batchProbe(_ interpreter: Interpreter, count: Int) throws -> Bool {
        guard count > 1, inputs.count >= count else { return false }
        let declared = reference.runtimeInputs
        guard !declared.isEmpty, declared.allSatisfy({ i in
            guard let s = i.shape, let first = s.first else { return false }
            return first.value == nil
        }) else { return false }
        for i in declared {
            let shapes = Set(inputs.map { $0[i.name]?.shape ?? [] })
            guard shapes.count == 1, let s = shapes.first, !s.isEmpty, s[0] > 0 else { return false }
        }
        let group = Array(inputs.prefix(count))
        let split: [[String: Tensor]]
        do {
            split = try Self.runStacked(interpreter, group, outputs: Array(outputs.prefix(count)))
        } catch {
            return false  // e.g. a reshape that fixes the batch: one input at a time
        }
        return zip(split, outputs).allSatisfy { got, want in got == want }
    }

    /// Runs `group` stacked along axis 0 and splits each output back into one tensor per input,
    /// shaped like that input's reference output (`outputs`, one per input of the group).
    static func runStacked(_ interpreter: Interpreter, _ group: [[String: Tensor]],
                           outputs: [[String: Tensor]]) throws -> [[String: Tensor]] {
        guard let first = group.first else { return [] }
        var stacked: [String: Tensor] = [:]
        for name in first.keys {
            let parts = try group.map { sample -> Tensor in
                guard let t = sample[name] else { throw Error(description: "input '\(name)' is missing from a sample") }
                return t
            }
            stacked[name] = try stack(parts, name: name)
        }
        let results = try interpreter.run(stacked)
        var split = [[String: Tensor]](repeating: [:], count: group.count)
        for (name, t) in results {
            let shapes = outputs.map { $0[name]?.shape }
            guard let s0 = shapes.first ?? nil, !s0.isEmpty, shapes.allSatisfy({ $0 == s0 }),
                  t.shape == [s0[0] * group.count] + s0.dropFirst() else {
                throw Error(description: "output '\(name)' of a stacked run has shape \(t.shape): it does not split per input")
            }
            let per = s0.reduce(1, *)
            for k in group.indices {
                split[k][name] = Tensor(dtype: t.dtype, shape: s0, storage: slice(t.storage, (k * per)..<((k + 1) * per)))
            }
        }
        return split
    }

    /// Tensors of one shape concatenated along axis 0.
    static func stack(_ parts: [Tensor], name: String) throws -> Tensor {
        guard let t0 = parts.first, !t0.shape.isEmpty else { throw Error(description: "input '\(name)' has no axis 0 to stack on") }
        guard parts.allSatisfy({ $0.shape == t0.shape && $0.dtype == t0.dtype }) else {
            throw Error(description: "input '\(name)' differs in shape or type between samples")
        }
        let shape = [t0.shape[0] * parts.count] + t0.shape.dropFirst()
        switch t0.storage {
        case .float: return Tensor(dtype: t0.dtype, shape: shape, storage: .float(parts.flatMap { $0.floats ?? [] }))
        case .int: return Tensor(dtype: t0.dtype, shape: shape, storage: .int(parts.flatMap { $0.ints ?? [] }))
        case .bool:
            return Tensor(dtype: t0.dtype, shape: shape, storage: .bool(parts.flatMap { p -> [Bool] in
                if case .bool(let b) = p.storage { return b } else { return [] }
            }))
        }
    }

    static func slice(_ s: TensorStorage, _ r: Range<Int>) -> TensorStorage {
        switch s {
        case .float(let a): return .float(Array(a[r]))
        case .int(let a): return .int(Array(a[r]))
        case .bool(let a): return .bool(Array(a[r]))
        }
    }
}
