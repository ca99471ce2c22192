import ShrinkwrapIR

/// Convolutions, pooling, resizing and the pixel rearrangements (MIL tensors
/// are channel-first like the IR's: [N, C, *spatial]).
extension MILOpReaders {
    static let convolution: [String: MILOpReader] = [
        "conv": { r in try r.conv() },
        "conv_transpose": { r in try r.convTranspose() },
        "avg_pool": { r in try r.pool("AveragePool") },
        "max_pool": { r in try r.pool("MaxPool") },
        "l2_pool": { r in try r.pool("LpPool") },
        "upsample_nearest_neighbor": { r in try r.upsample(linear: false) },
        "upsample_bilinear": { r in try r.upsample(linear: true) },
        "resize_nearest_neighbor": { r in try r.resize(linear: false) },
        "resize_bilinear": { r in try r.resize(linear: true) },
        "pixel_shuffle": { r in
            r.node("DepthToSpace", [try r.x()], [r.out()], ["blocksize": .int(try r.int("upscale_factor", 1)), "mode": .string("CRD")])
        },
        "depth_to_space": { r in
            r.node("DepthToSpace", [try r.x()], [r.out()], ["blocksize": .int(try r.int("block_size", 1)), "mode": .string("DCR")])
        },
        "space_to_depth": { r in r.node("SpaceToDepth", [try r.x()], [r.out()], ["blocksize": .int(try r.int("block_size", 1))]) },
    ]
}

extension MILReader {
    /// The IR padding attributes for MIL's pad_type / pad over `spatial` axes.
    func padding(spatial: Int) throws -> [String: Attribute] {
        switch try string("pad_type", "valid") {
        case "valid": return ["pads": .ints(Array(repeating: 0, count: 2 * spatial))]
        case "same": return ["auto_pad": .string("SAME_UPPER")]
        case "same_lower": return ["auto_pad": .string("SAME_LOWER")]
        case "custom":
            let p = try intList("pad") ?? Array(repeating: 0, count: 2 * spatial)
            guard p.count == 2 * spatial, p.allSatisfy({ $0 >= 0 }) else { throw bad("pad \(p) for \(spatial) spatial axes") }
            // MIL: [begin0, end0, begin1, end1, …]; the IR: [begin…, end…].
            return ["pads": .ints(stride(from: 0, to: p.count, by: 2).map { p[$0] } + stride(from: 1, to: p.count, by: 2).map { p[$0] })]
        case let t: throw refuse("pad_type '\(t)'")
        }
    }

    /// strides / dilations (ones when absent), checked against the spatial rank.
    func spatialList(_ key: String, _ spatial: Int) throws -> [Int] {
        let v = try intList(key) ?? Array(repeating: 1, count: spatial)
        guard v.count == spatial, v.allSatisfy({ $0 >= 1 }) else { throw bad("\(key) \(v) for \(spatial) spatial axes") }
        return v
    }

    mutating func conv() throws {
        let x = try self.x(), w = try self.x("weight")
        guard let wr = rank(w), wr >= 3 else { throw refuse("conv weight without a fixed rank ≥ 3") }
        let spatial = wr - 2
        var attributes = try padding(spatial: spatial)
        attributes["strides"] = .ints(try spatialList("strides", spatial))
        attributes["dilations"] = .ints(try spatialList("dilations", spatial))
        attributes["group"] = .int(try int("groups", 1))
        var inputs = [x, w]
        if let b = try opt("bias") { inputs.append(b) }
        node("Conv", inputs, [out()], attributes)
    }

    /// conv_transpose: weight [C_in, C_out / groups, *k] as the IR's; the
    /// declared output size fixes the output padding.
    mutating func convTranspose() throws {
        let x = try self.x(), w = try self.x("weight")
        guard let ws = shape(w), ws.count >= 3 else { throw refuse("conv_transpose weight without a fixed shape of rank ≥ 3") }
        let spatial = ws.count - 2
        var attributes = try padding(spatial: spatial)
        let strides = try spatialList("strides", spatial), dilations = try spatialList("dilations", spatial)
        attributes["strides"] = .ints(strides)
        attributes["dilations"] = .ints(dilations)
        attributes["group"] = .int(try int("groups", 1))
        if let outShape = shape(out()), outShape.count == spatial + 2 {
            if case .ints(let pads)? = attributes["pads"], let xs = shape(x), xs.count == spatial + 2 {
                var extra: [Int] = []
                for k in 0..<spatial {
                    let natural = (xs[k + 2] - 1) * strides[k] + (ws[k + 2] - 1) * dilations[k] + 1 - pads[k] - pads[k + spatial]
                    let e = outShape[k + 2] - natural
                    guard e >= 0, e < max(strides[k], dilations[k]) else { throw bad("declared output \(outShape) does not fit the convolution") }
                    extra.append(e)
                }
                if extra.contains(where: { $0 != 0 }) { attributes["output_padding"] = .ints(extra) }
            } else {
                attributes["output_shape"] = .ints(Array(outShape.dropFirst(2)))
            }
        }
        var inputs = [x, w]
        if let b = try opt("bias") { inputs.append(b) }
        node("ConvTranspose", inputs, [out()], attributes)
    }

    /// avg_pool / max_pool / l2_pool.
    mutating func pool(_ ir: String) throws {
        let x = try self.x()
        guard let k = try intList("kernel_sizes"), !k.isEmpty, k.allSatisfy({ $0 >= 1 }) else { throw bad("no kernel_sizes") }
        var attributes = try padding(spatial: k.count)
        attributes["kernel_shape"] = .ints(k)
        attributes["strides"] = .ints(try spatialList("strides", k.count))
        if try bool("ceil_mode", false) { attributes["ceil_mode"] = .int(1) }
        if ir == "AveragePool" { attributes["count_include_pad"] = .int(try bool("exclude_padding_from_average", false) ? 0 : 1) }
        if ir == "LpPool" { attributes["p"] = .int(2) }
        node(ir, [x], [out()], attributes)
    }

    /// upsample_*: integer or fractional scale factors on the last two axes.
    mutating func upsample(linear: Bool) throws {
        let x = try self.x()
        let r = try needRank(x)
        let sh = try float("scale_factor_height", 1), sw = try float("scale_factor_width", 1)
        guard sh > 0, sw > 0, sh.isFinite, sw.isFinite, r >= 3 else { throw bad("scale factors \(sh), \(sw) on rank \(r)") }
        // Output sizes floor(H · scale) when the input shape is known: coordinates then map by the
        // size ratio, as TensorFlow's resize (which MIL's documentation names as its twin) does.
        let scaled: [String]
        if let s = shape(x), s.count == r {
            let sizes = Array(s.dropLast(2)) + [Int((Float(s[r - 2]) * sh).rounded(.down)), Int((Float(s[r - 1]) * sw).rounded(.down))]
            scaled = ["", "", ints(sizes, "\(out())_sizes")]
        } else {
            scaled = ["", constant(.dense(Tensor(Array(repeating: 1, count: r - 2) + [sh, sw], shape: [r])), "\(out())_scales")]
        }
        var attributes: [String: Attribute] = ["mode": .string(linear ? "linear" : "nearest")]
        if linear {
            let align = try bool("align_corners", true)
            let halfPixel = try bool("half_pixel_centers", !align)
            attributes["coordinate_transformation_mode"] = .string(align ? "align_corners" : halfPixel ? "half_pixel" : "asymmetric")
        } else {
            attributes["coordinate_transformation_mode"] = .string("asymmetric")
            attributes["nearest_mode"] = .string("floor")
        }
        node("Resize", [x] + scaled, [out()], attributes)
    }

    /// resize_*: target sizes of the last two axes.
    mutating func resize(linear: Bool) throws {
        let x = try self.x()
        let s = try needShape(x)
        let h = try int("target_size_height", 1), w = try int("target_size_width", 1)
        guard s.count >= 3, h >= 1, w >= 1 else { throw bad("target size \(h)×\(w) on shape \(s)") }
        let sizes = ints(Array(s.dropLast(2)) + [h, w], "\(out())_sizes")
        var attributes: [String: Attribute] = ["mode": .string(linear ? "linear" : "nearest")]
        if linear {
            switch try string("sampling_mode", "DEFAULT") {
            case "DEFAULT": attributes["coordinate_transformation_mode"] = .string("asymmetric")
            case "STRICT_ALIGN_CORNERS", "ALIGN_CORNERS": attributes["coordinate_transformation_mode"] = .string("align_corners")
            case "UNALIGN_CORNERS": attributes["coordinate_transformation_mode"] = .string("half_pixel")
            case let m: throw refuse("resize_bilinear sampling_mode '\(m)'")
            }
        } else {
            attributes["coordinate_transformation_mode"] = .string("asymmetric")
            attributes["nearest_mode"] = .string("floor")
        }
        node("Resize", [x, "", "", sizes], [out()], attributes)
    }
}
