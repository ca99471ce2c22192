import ShrinkwrapReport

/// Fixed reports for the golden tests. Every number is written out, so the
/// goldens change only when a renderer does.
enum Fixtures {
    static let reference = SizeInfo(fileBytes: 4_000_512, weightBytes: 4_000_000, weightCount: 1_000_000)

    static func logits(top1: Double?, top5: Double?, cos: (Double, Double), snr: Double?, psnr: Double?, maxAbs: Double,
                       flips: [LabelFlip] = []) -> OutputMetrics {
        OutputMetrics(name: "logits", inputs: 32, classes: top1 == nil ? nil : 1000, top1Agreement: top1, top5Agreement: top5,
                      meanCosine: cos.0, minCosine: cos.1, snrDB: snr, psnrDB: psnr, maxAbsError: maxAbs, flips: flips)
    }

    static func embedding(cos: (Double, Double), snr: Double?, psnr: Double?, maxAbs: Double) -> OutputMetrics {
        OutputMetrics(name: "embedding", inputs: 32, meanCosine: cos.0, minCosine: cos.1, snrDB: snr, psnrDB: psnr, maxAbsError: maxAbs)
    }

    static func layers(_ scale: Double) -> [LayerMetrics] {
        [
            LayerMetrics(node: "conv1", op: "Conv", weight: "conv1.weight", weightSQNR: 6 * scale, outputSQNR: 5.5 * scale),
            LayerMetrics(node: "relu1", op: "Relu", outputSQNR: 5.25 * scale),
            LayerMetrics(node: "fc", op: "Gemm", weight: "fc.weight", weightSQNR: 6.02 * scale, outputSQNR: 4.75 * scale),
        ]
    }

    static let skippedBias = [SkippedWeight(name: "fc.bias", reason: "smaller than --min-size (1000 elements)")]

    /// Three modes at 16/8/4/2/1 bits, a classifier output and an embedding
    /// output, real data.
    static let sweep = SweepReport(
        tool: "shrinkwrap 0.4.0",
        model: ModelInfo(file: "models/resnet-tiny.onnx", sha256: "9f2c1e0b7d4a5c3e8f6a1b2d3c4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6a", format: "onnx"),
        data: DataInfo(description: "imagenet-val subset (npz)", count: 32,
                       sha256: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", random: false),
        options: ["samples": "32", "granularity": "per-channel", "bits": "8,4,2,1"],
        reference: reference,
        variants: [
            // Deliberately not in display order: renderers sort.
            Variant(mode: "linear", bits: 4, granularity: "per-channel",
                    size: SizeInfo(fileBytes: 533_012, weightBytes: 532_500, weightCount: 1_000_000),
                    outputs: [logits(top1: 96.875, top5: 100, cos: (0.993512, 0.987001), snr: 18.412, psnr: 31.0568, maxAbs: 0.41235),
                              embedding(cos: (0.991002, 0.984113), snr: 17.305, psnr: 29.944, maxAbs: 0.2875)],
                    layers: layers(4), skipped: skippedBias, file: "out/resnet-tiny.linear4.onnx"),
            Variant(mode: "fp16", bits: 16, granularity: "per-tensor",
                    size: SizeInfo(fileBytes: 2_000_512, weightBytes: 2_000_000, weightCount: 1_000_000),
                    outputs: [logits(top1: 100, top5: 100, cos: (0.99999994, 0.9999998), snr: nil, psnr: nil, maxAbs: 0),
                              embedding(cos: (0.9999999, 0.9999997), snr: 71.25, psnr: 84.5, maxAbs: 0.00012207)],
                    layers: [LayerMetrics(node: "conv1", op: "Conv", weight: "conv1.weight", weightSQNR: nil, outputSQNR: nil)]),
            Variant(mode: "linear", bits: 8, granularity: "per-channel",
                    size: SizeInfo(fileBytes: 1_033_012, weightBytes: 1_032_500, weightCount: 1_000_000),
                    outputs: [logits(top1: 100, top5: 100, cos: (0.99991, 0.99982), snr: 40.125, psnr: 52.75, maxAbs: 0.0312),
                              embedding(cos: (0.99989, 0.99975), snr: 39.5, psnr: 51.25, maxAbs: 0.0199)],
                    layers: layers(8), skipped: skippedBias, file: "out/resnet-tiny.linear8.onnx"),
            Variant(mode: "linear", bits: 2, granularity: "per-channel",
                    size: SizeInfo(fileBytes: 283_012, weightBytes: 282_500, weightCount: 1_000_000),
                    outputs: [logits(top1: 56.25, top5: 81.25, cos: (0.80125, 0.61234), snr: 4.875, psnr: 17.5, maxAbs: 2.75,
                                     flips: [LabelFlip(reference: "tabby cat", candidate: "tiger cat", count: 5),
                                             LabelFlip(reference: "golden retriever", candidate: "Labrador retriever", count: 3),
                                             LabelFlip(reference: "espresso", candidate: "cup", count: 1)]),
                              embedding(cos: (0.78125, 0.55), snr: 3.5, psnr: 16.25, maxAbs: 1.875)],
                    layers: layers(2), skipped: skippedBias),
            Variant(mode: "linear", bits: 1, granularity: "per-channel",
                    size: SizeInfo(fileBytes: 158_012, weightBytes: 157_500, weightCount: 1_000_000),
                    outputs: [logits(top1: 3.125, top5: 9.375, cos: (0.12, -0.05), snr: -0.25, psnr: 9.5, maxAbs: 8.5,
                                     flips: [LabelFlip(reference: "tabby cat", candidate: "window screen", count: 12)]),
                              embedding(cos: (0.1, -0.2), snr: -1.5, psnr: 8.25, maxAbs: 6.25)],
                    skipped: skippedBias),
            Variant(mode: "kmeans-lut", bits: 8, granularity: "per-tensor",
                    size: SizeInfo(fileBytes: 1_001_536, weightBytes: 1_001_024, weightCount: 1_000_000),
                    outputs: [logits(top1: 100, top5: 100, cos: (0.99996, 0.99990), snr: 44.5, psnr: 56.125, maxAbs: 0.0205),
                              embedding(cos: (0.99995, 0.99987), snr: 43.75, psnr: 55.5, maxAbs: 0.0125)]),
            Variant(mode: "kmeans-lut", bits: 4, granularity: "per-tensor",
                    size: SizeInfo(fileBytes: 500_576, weightBytes: 500_064, weightCount: 1_000_000),
                    outputs: [logits(top1: 98.4375, top5: 100, cos: (0.9975, 0.9931), snr: 23.25, psnr: 35.75, maxAbs: 0.2031),
                              embedding(cos: (0.9968, 0.9912), snr: 22.5, psnr: 34.25, maxAbs: 0.1492)],
                    layers: layers(4.5)),
            Variant(mode: "kmeans-lut", bits: 2, granularity: "per-tensor",
                    size: SizeInfo(fileBytes: 250_528, weightBytes: 250_016, weightCount: 1_000_000),
                    outputs: [logits(top1: 84.375, top5: 96.875, cos: (0.9421, 0.8713), snr: 9.875, psnr: 22.5, maxAbs: 1.125,
                                     flips: [LabelFlip(reference: "tabby cat", candidate: "tiger cat", count: 3),
                                             LabelFlip(reference: "espresso", candidate: "cup", count: 2)]),
                              embedding(cos: (0.9355, 0.8621), snr: 9.125, psnr: 21.75, maxAbs: 0.875)]),
            Variant(mode: "kmeans-lut", bits: 1, granularity: "per-tensor",
                    size: SizeInfo(fileBytes: 125_516, weightBytes: 125_004, weightCount: 1_000_000),
                    outputs: [logits(top1: 12.5, top5: 28.125, cos: (0.4375, 0.125), snr: 1.25, psnr: 13.75, maxAbs: 5.5),
                              embedding(cos: (0.41, 0.09), snr: 0.75, psnr: 12.5, maxAbs: 4.25)]),
        ]
    )

    /// Random inputs, the first output not a score vector, a mode outside the
    /// known list, two granularities at one width, no file sizes, and names
    /// that need escaping in every format.
    static let sweepRandom = SweepReport(
        tool: "shrinkwrap 0.4.0",
        model: ModelInfo(file: "models/a|b <net> & \"friends\"'s.mlmodel", sha256: "aa", format: "coreml"),
        data: DataInfo(description: "random normal, seed 42", count: 8, sha256: "bb", random: true),
        options: ["random": "true", "seed": "42"],
        reference: SizeInfo(weightBytes: 80_000, weightCount: 20_000),
        variants: [
            Variant(mode: "palette", bits: 4, granularity: "per-tensor",
                    size: SizeInfo(weightBytes: 10_064, weightCount: 20_000),
                    outputs: [OutputMetrics(name: "features, \"pooled\"", inputs: 8, meanCosine: 0.9925, minCosine: 0.9875,
                                            snrDB: 18.5, psnrDB: 27.25, maxAbsError: 0.3125)]),
            Variant(mode: "fp16", bits: 16, granularity: "per-tensor",
                    size: SizeInfo(weightBytes: 40_000, weightCount: 20_000),
                    outputs: [OutputMetrics(name: "features, \"pooled\"", inputs: 8, meanCosine: 1, minCosine: 1,
                                            snrDB: 68.5, psnrDB: 80.25, maxAbsError: 0.000244),
                              OutputMetrics(name: "probs", inputs: 8, classes: 10, top1Agreement: 100, top5Agreement: 100,
                                            meanCosine: 1, minCosine: 1, maxAbsError: 0)],
                    layers: [LayerMetrics(node: "dense<1>", op: "innerProduct", weight: "W|1", weightSQNR: nil, outputSQNR: 70.5)],
                    skipped: [SkippedWeight(name: "embedding_table", reason: "shared by 2 ops & used as int \"indices\"")]),
            Variant(mode: "linear-lut", bits: 4, granularity: "per-tensor",
                    size: SizeInfo(weightBytes: 10_064, weightCount: 20_000),
                    outputs: [OutputMetrics(name: "features, \"pooled\"", inputs: 8, meanCosine: 0.9812, minCosine: 0.95,
                                            snrDB: 14.25, psnrDB: 23.5, maxAbsError: 0.5),
                              OutputMetrics(name: "probs", inputs: 8, classes: 10, top1Agreement: 87.5, top5Agreement: 100,
                                            meanCosine: 0.975, minCosine: 0.9, snrDB: 12.5, psnrDB: 15.25, maxAbsError: 0.125,
                                            flips: [LabelFlip(reference: "<zero>", candidate: "one, or \"1\"", count: 1)])]),
            Variant(mode: "linear-lut", bits: 4, granularity: "per-channel",
                    size: SizeInfo(weightBytes: 10_640, weightCount: 20_000),
                    outputs: [OutputMetrics(name: "features, \"pooled\"", inputs: 8, meanCosine: 0.9875, minCosine: 0.97,
                                            snrDB: 16.75, psnrDB: 25.5, maxAbsError: 0.375)]),
            Variant(mode: "linear-lut", bits: 2, granularity: "per-tensor",
                    size: SizeInfo(weightBytes: 5_064, weightCount: 20_000),
                    outputs: [OutputMetrics(name: "features, \"pooled\"", inputs: 8, meanCosine: 0.71, minCosine: -0.125,
                                            snrDB: 2.5, psnrDB: 11.25, maxAbsError: 2.5)],
                    layers: [LayerMetrics(node: "dense<1>", op: "innerProduct", weight: "W|1", weightSQNR: 7.25, outputSQNR: -.infinity)]),
        ]
    )
}
