// ConvTranspose with output_padding → MIL conv_transpose, then a crop.
import ShrinkwrapIR

extension MILOpWriters {
    /// ONNX ConvTranspose's output_padding adds rows at the end of each axis.
    /// coremltools' torch frontend (frontend/torch/ops.py, `_convolution`'s
    /// transposed branch) writes it as an unpadded conv_transpose followed by
    /// a crop of (pad_begin, pad_end − output_padding), not with
    /// `output_shape`; so does this. Rows beyond the unpadded result
    /// (output_padding > pad_end) would hold the bias alone: refused.
    static func convTransposeCropped(_ w: inout MILWriter, _ n: Node, _ args: [(String, MILArgument)], spatial: Int) throws {
        guard n.string("auto_pad", "NOTSET") == "NOTSET" else { throw MILWriterError("output_padding with auto_pad \(n.string("auto_pad", ""))") }
        let pads = n.ints("pads") ?? [Int](repeating: 0, count: 2 * spatial)
        let extra = n.ints("output_padding") ?? []
        guard pads.count == 2 * spatial, extra.count == spatial, pads.allSatisfy({ $0 >= 0 }), extra.allSatisfy({ $0 >= 0 }) else {
            throw MILWriterError("pads \(pads) / output_padding \(extra) for \(spatial)-D")
        }
        let out = try w.computeType(n.outputs[0])
        let x = try w.shape(try input(n, 0)), k = try w.shape(try input(n, 1))
        let strides = try spatialInts(n, "strides", spatial: spatial, default: 1)
        let dilations = try spatialInts(n, "dilations", spatial: spatial, default: 1)
        guard x.count == spatial + 2, out.shape.count == spatial + 2 else { throw MILWriterError("input \(x) for \(spatial)-D") }
        var full = Array(out.shape.prefix(2))
        for i in 0..<spatial {
            guard extra[i] <= pads[spatial + i] else {
                throw MILWriterError("output_padding \(extra[i]) beyond the end pad \(pads[spatial + i]) (rows only the bias reaches)")
            }
            full.append(strides[i] * (x[i + 2] - 1) + dilations[i] * (k[i + 2] - 1) + 1)
        }
        let begin = [0, 0] + pads.prefix(spatial)
        let end = (0..<(spatial + 2)).map { $0 < 2 ? full[$0] : full[$0] - pads[spatial + $0 - 2] + extra[$0 - 2] }
        guard zip(begin, end).map({ $1 - $0 }) == out.shape else { throw MILWriterError("output shape \(out.shape), cropped \(begin)…\(end)") }
        let unpadded = args + [("pad_type", .value(w.string(n, "pad_type", "custom"))), ("pad", .value(w.ints(n, "pad", Array(repeating: 0, count: 2 * spatial))))]
        let y = w.builder.op1("conv_transpose", unpadded, output: w.builder.fresh(n.outputs[0] + "_uncropped"), MILTensorType(dataType: out.dataType, shape: full))
        try w.emit(n, "slice_by_index", [("x", .value(y)), ("begin", .value(w.ints(n, "begin", begin))), ("end", .value(w.ints(n, "end", end)))])
    }
}
