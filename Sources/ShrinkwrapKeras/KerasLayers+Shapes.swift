import ShrinkwrapIR

/// Merging layers (Add, Concatenate, …) and layers that only move elements
/// (Flatten, Reshape, Permute, padding, cropping, up-sampling, RepeatVector).
extension KerasLayers {
    static let merging: [String: Translator] = [
        "Add": { c, call in try merge(&c, call, variadic: "Sum", binary: "Add") },
        "Average": { c, call in try merge(&c, call, variadic: "Mean", binary: "Mean") },
        "Maximum": { c, call in try merge(&c, call, variadic: "Max", binary: "Max") },
        "Minimum": { c, call in try merge(&c, call, variadic: "Min", binary: "Min") },
        "Multiply": { c, call in
            guard var acc = call.inputs.first, call.inputs.count >= 2 else { throw c.malformed(call, "Multiply needs two or more inputs") }
            for (i, x) in call.inputs.dropFirst().enumerated() {
                let last = i == call.inputs.count - 2
                acc = KValue(name: c.emit("Mul", [acc.name, x.name], out: call.outputName + (last ? "" : "/mul")), shape: broadcast(acc.shape, x.shape))
            }
            return [acc]
        },
        "Subtract": { c, call in
            guard call.inputs.count == 2 else { throw c.malformed(call, "Subtract needs exactly two inputs, got \(call.inputs.count)") }
            let a = call.inputs[0], b = call.inputs[1]
            return [KValue(name: c.emit("Sub", [a.name, b.name], out: call.outputName), shape: broadcast(a.shape, b.shape))]
        },
        "Concatenate": { c, call in
            guard let first = call.inputs.first, call.inputs.count >= 1 else { throw c.malformed(call, "Concatenate without inputs") }
            let axis = try KerasLayers.axis(c, call, call.config["axis"], default: -1, rank: first.rank)
            var shape = first.shape
            for x in call.inputs.dropFirst() {
                guard x.rank == first.rank else { throw c.malformed(call, "inputs of ranks \(first.rank) and \(x.rank)") }
                shape[axis] = shape[axis].flatMap { a in x.shape[axis].map { a + $0 } }
            }
            return [KValue(name: c.emit("Concat", call.inputs.map(\.name), ["axis": .int(axis)], out: call.outputName), shape: shape)]
        },
    ]

    static func merge(_ c: inout KerasContext, _ call: KerasCall, variadic: String, binary: String) throws -> [KValue] {
        guard call.inputs.count >= 2 else { throw c.malformed(call, "a merge layer needs two or more inputs, got \(call.inputs.count)") }
        let shape = call.inputs.dropFirst().reduce(call.inputs[0].shape) { broadcast($0, $1.shape) }
        let op = call.inputs.count == 2 ? binary : variadic
        return [KValue(name: c.emit(op, call.inputs.map(\.name), out: call.outputName), shape: shape)]
    }

    /// Numpy broadcasting of two Keras shapes (unknown where either is unknown and not 1).
    static func broadcast(_ a: [Int?], _ b: [Int?]) -> [Int?] {
        let r = max(a.count, b.count)
        return (0..<r).map { k -> Int? in
            let x = k - (r - a.count) >= 0 ? a[k - (r - a.count)] : 1
            let y = k - (r - b.count) >= 0 ? b[k - (r - b.count)] : 1
            if x == 1 { return y }
            if y == 1 { return x }
            return x ?? y
        }
    }

    // MARK: - Reshaping

    static let reshaping: [String: Translator] = [
        "Flatten": { c, call in
            var x = try call.input(c.file)
            if call.config["data_format"]?.string == "channels_first", x.rank > 2 {
                // Keras moves channels last first, so that the order matches a channels-last model.
                x = KValue(name: c.emit("Transpose", [x.name], ["perm": .ints([0] + Array(2..<x.rank) + [1])], out: call.outputName + "/nhwc"),
                           shape: [x.shape[0]] + Array(x.shape[2...]) + [x.shape[1]])
            }
            let inner = x.shape.dropFirst().reduce(Optional(1)) { acc, d in acc.flatMap { a in d.map { a * $0 } } }
            return [KValue(name: c.emit("Flatten", [x.name], ["axis": .int(1)], out: call.outputName), shape: [x.shape[0], inner])]
        },
        "Reshape": { c, call in
            let x = try call.input(c.file)
            guard let target = call.config["target_shape"]?.ints(), target.allSatisfy({ $0 >= -1 }), target.filter({ $0 == -1 }).count <= 1 else {
                throw c.malformed(call, "target_shape is not a list of sizes")
            }
            let known = x.shape.dropFirst().reduce(Optional(1)) { acc, d in acc.flatMap { a in d.map { a * $0 } } }
            var shape: [Int?] = target.map { $0 < 0 ? nil : $0 }
            if let total = known, let i = target.firstIndex(of: -1) {
                let rest = target.filter { $0 >= 0 }.reduce(1, *)
                guard rest > 0, total % rest == 0 else { throw c.malformed(call, "cannot reshape \(describe(x.shape)) to \(target)") }
                shape[i] = total / rest
            }
            // 0 keeps the batch size; an unresolved -1 is the only one.
            let fixed = c.int64s(call.outputName + "/shape", [0] + shape.map { $0 ?? -1 })
            return [KValue(name: c.emit("Reshape", [x.name, fixed], out: call.outputName), shape: [x.shape[0]] + shape)]
        },
        "Permute": { c, call in
            let x = try call.input(c.file)
            guard let dims = call.config["dims"]?.ints(), dims.count == x.rank - 1, Set(dims) == Set(1..<x.rank) else {
                throw c.malformed(call, "dims is not a permutation of 1…\(x.rank - 1)")
            }
            return [KValue(name: c.emit("Transpose", [x.name], ["perm": .ints([0] + dims)], out: call.outputName), shape: [x.shape[0]] + dims.map { x.shape[$0] })]
        },
        "RepeatVector": { c, call in
            let x = try call.input(c.file)
            guard let n = call.config["n"]?.int, n > 0, x.rank == 2 else { throw c.malformed(call, "n is not a positive integer or the input is not [batch, features]") }
            let axes = c.int64s(call.outputName + "/axes", [1])
            let u = c.emit("Unsqueeze", [x.name, axes], out: call.outputName + "/unsqueezed")
            let reps = c.int64s(call.outputName + "/repeats", [1, n, 1])
            return [KValue(name: c.emit("Tile", [u, reps], out: call.outputName), shape: [x.shape[0], n, x.shape[1]])]
        },
        "ZeroPadding1D": { c, call in try zeroPadding(&c, call, spatial: 1) },
        "ZeroPadding2D": { c, call in try zeroPadding(&c, call, spatial: 2) },
        "ZeroPadding3D": { c, call in try zeroPadding(&c, call, spatial: 3) },
        "Cropping1D": { c, call in try cropping(&c, call, spatial: 1) },
        "Cropping2D": { c, call in try cropping(&c, call, spatial: 2) },
        "Cropping3D": { c, call in try cropping(&c, call, spatial: 3) },
        "UpSampling1D": { c, call in try upSampling(&c, call, spatial: 1) },
        "UpSampling2D": { c, call in try upSampling(&c, call, spatial: 2) },
        "UpSampling3D": { c, call in try upSampling(&c, call, spatial: 3) },
    ]

    /// Per spatial axis (before, after) from `padding` / `cropping`: n, (a, b) per axis, or ((a, b), …).
    static func pairs(_ c: KerasContext, _ call: KerasCall, _ v: KerasJSON?, spatial: Int) throws -> [(Int, Int)] {
        guard let v else { throw c.malformed(call, "no padding / cropping given") }
        if let n = v.int { return Array(repeating: (n, n), count: spatial) }
        guard let a = v.array else { throw c.malformed(call, "padding / cropping is not a number or list") }
        if spatial == 1, let ints = v.ints(), ints.count == 2 { return [(ints[0], ints[1])] }
        guard a.count == spatial else { throw c.malformed(call, "\(a.count) padding / cropping entries for \(spatial) spatial axes") }
        return try a.map { e in
            if let n = e.int { return (n, n) }
            guard let p = e.ints(), p.count == 2 else { throw c.malformed(call, "a padding / cropping entry is not n or (before, after)") }
            return (p[0], p[1])
        }
    }

    /// The spatial axes of a Keras value: 1…n for channels last, 2…n+1 for channels first.
    static func spatialAxes(_ call: KerasCall, rank: Int, spatial: Int) -> [Int] {
        call.config["data_format"]?.string == "channels_first" ? Array(2..<(2 + spatial)) : Array(1..<(1 + spatial))
    }

    static func zeroPadding(_ c: inout KerasContext, _ call: KerasCall, spatial: Int) throws -> [KValue] {
        let x = try call.input(c.file)
        guard x.rank == spatial + 2 else { throw c.malformed(call, "input of rank \(x.rank) for \(spatial)-D padding") }
        let p = try pairs(c, call, call.config["padding"], spatial: spatial)
        guard p.allSatisfy({ $0.0 >= 0 && $0.1 >= 0 }) else { throw c.malformed(call, "negative padding") }
        var begin = [Int](repeating: 0, count: x.rank), end = begin
        var shape = x.shape
        for (k, a) in spatialAxes(call, rank: x.rank, spatial: spatial).enumerated() {
            begin[a] = p[k].0; end[a] = p[k].1
            shape[a] = x.shape[a].map { $0 + p[k].0 + p[k].1 }
        }
        let pads = c.int64s(call.outputName + "/pads", begin + end)
        return [KValue(name: c.emit("Pad", [x.name, pads], ["mode": .string("constant")], out: call.outputName), shape: shape)]
    }

    static func cropping(_ c: inout KerasContext, _ call: KerasCall, spatial: Int) throws -> [KValue] {
        let x = try call.input(c.file)
        guard x.rank == spatial + 2 else { throw c.malformed(call, "input of rank \(x.rank) for \(spatial)-D cropping") }
        let p = try pairs(c, call, call.config["cropping"], spatial: spatial)
        guard p.allSatisfy({ $0.0 >= 0 && $0.1 >= 0 }) else { throw c.malformed(call, "negative cropping") }
        let axes = spatialAxes(call, rank: x.rank, spatial: spatial)
        var shape = x.shape
        for (k, a) in axes.enumerated() { shape[a] = x.shape[a].map { $0 - p[k].0 - p[k].1 } }
        guard shape.allSatisfy({ ($0 ?? 1) > 0 }) else { throw c.malformed(call, "cropping \(p) removes the whole input \(describe(x.shape))") }
        let starts = c.int64s(call.outputName + "/starts", p.map(\.0))
        let ends = c.int64s(call.outputName + "/ends", p.map { $0.1 == 0 ? Int(Int64.max) : -$0.1 })
        let ax = c.int64s(call.outputName + "/axes", axes)
        return [KValue(name: c.emit("Slice", [x.name, starts, ends, ax], out: call.outputName), shape: shape)]
    }

    /// UpSampling: each spatial element repeated `size` times (nearest), or bilinear (2-D, TF's half-pixel resize).
    static func upSampling(_ c: inout KerasContext, _ call: KerasCall, spatial: Int) throws -> [KValue] {
        let x = try call.input(c.file)
        guard x.rank == spatial + 2 else { throw c.malformed(call, "input of rank \(x.rank) for \(spatial)-D up-sampling") }
        guard let size = (spatial == 1 ? call.config["size"]?.ints(count: 1) : call.config["size"]?.ints(count: spatial)),
              size.count == spatial, size.allSatisfy({ $0 > 0 }) else { throw c.malformed(call, "size is not \(spatial) positive integers") }
        let bilinear = call.config["interpolation"]?.string == "bilinear"
        if let i = call.config["interpolation"]?.string, i != "nearest", i != "bilinear" || spatial != 2 {
            throw c.unsupported(call, "\(i) interpolation")
        }
        // Resize in channels-first order, as the exporters' lowerings expect it.
        let channelsFirst = call.config["data_format"]?.string == "channels_first"
        var shape = x.shape
        for (k, a) in spatialAxes(call, rank: x.rank, spatial: spatial).enumerated() { shape[a] = x.shape[a].map { $0 * size[k] } }
        let s = c.constant(call.outputName + "/scales", Tensor([1, 1] + size.map(Float.init), shape: [x.rank]))
        let attrs: [String: Attribute] = bilinear
            ? ["mode": .string("linear"), "coordinate_transformation_mode": .string("half_pixel")]
            : ["mode": .string("nearest"), "coordinate_transformation_mode": .string("asymmetric"), "nearest_mode": .string("floor")]
        if channelsFirst { return [KValue(name: c.emit("Resize", [x.name, "", s], attrs, out: call.outputName), shape: shape)] }
        let y = c.emit("Resize", [c.toChannelsFirst(x), "", s], attrs, out: call.outputName + "/nchw")
        return [KValue(name: c.toChannelsLast(y, rank: x.rank, out: call.outputName), shape: shape)]
    }
}
