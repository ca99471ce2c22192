// swift-tools-version:6.0
import PackageDescription

// Shrinkwrap: import → IR → compress → export, with a reference interpreter.
// Target layout and dependency rules: ../shared/DESIGN.md.
let package = Package(
    name: "Shrinkwrap",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "shrinkwrap", targets: ["ShrinkwrapCLI"]),
        // The facade and the modules its API speaks in (graphs and tensors, the interpreter,
        // compression plans and logs, reports, input data), so that a client can import each of them.
        .library(name: "Shrinkwrap", targets: ["Shrinkwrap", "ShrinkwrapIR", "ShrinkwrapRuntime", "ShrinkwrapCompression", "ShrinkwrapReport",
                                               "ShrinkwrapData"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", exact: "1.8.2"),
        .package(url: "https://github.com/apple/swift-protobuf", exact: "1.39.0"),
    ],
    targets: [
        .target(name: "ShrinkwrapIR"),
        // FlatBuffers reader/builder (ours, no dependencies): the base of the TFLite importer and exporter.
        .target(name: "FlatBuffers"),
        // ZIP archives in memory (no dependencies): read — central directory incl. ZIP64, stored + deflate members,
        // CRC-32 — and a deterministic writer of stored archives. Under .npz files and TFLite metadata's appended files.
        .target(name: "ZipArchive", dependencies: ["ShrinkwrapIR"]),
        // HDF5 files in memory, read-only and bounds-checked (ours, for Keras' .h5 and model.weights.h5): superblocks,
        // object headers, old- and new-style groups, attributes, contiguous / compact / chunked datasets (deflate via ZipArchive).
        .target(name: "HDF5", dependencies: ["ZipArchive"]),
        // SIMD compute kernels in C (SGEMM, depthwise conv, unary math): AVX-512 / AVX2+FMA / portable paths
        // chosen at run time (per-function target attributes, no unsafe flags); no dependencies, no threads.
        .target(name: "CKernels"),
        // The interpreter's persistent worker threads (pthreads; spin, then sleep), so small parallel ops
        // do not pay a thread wake-up each.
        .target(name: "CWorkPool"),
        .target(name: "ShrinkwrapRuntime", dependencies: ["ShrinkwrapIR", "CKernels", "CWorkPool"]),
        .target(name: "ShrinkwrapCompression", dependencies: ["ShrinkwrapIR"]),
        .target(name: "ShrinkwrapReport", dependencies: ["ShrinkwrapIR", "ShrinkwrapRuntime", "ShrinkwrapCompression"]),
        .target(
            name: "ONNXSchema",
            dependencies: [.product(name: "SwiftProtobuf", package: "swift-protobuf")],
            exclude: ["README.md"]
        ),
        .target(
            name: "CoreMLSchema",
            dependencies: [.product(name: "SwiftProtobuf", package: "swift-protobuf")],
            exclude: ["README.md"]
        ),
        .target(
            name: "ShrinkwrapONNX",
            dependencies: ["ShrinkwrapIR", "ONNXSchema", .product(name: "SwiftProtobuf", package: "swift-protobuf")]
        ),
        .target(name: "ShrinkwrapTFLite", dependencies: ["ShrinkwrapIR", "FlatBuffers", "ZipArchive"]),
        .target(
            name: "TensorFlowSchema",
            dependencies: [.product(name: "SwiftProtobuf", package: "swift-protobuf")],
            exclude: ["README.md"]
        ),
        // Keras importer: .h5 (Keras 2, model_config + model_weights) and .keras (Keras 3 zip: config.json + model.weights.h5).
        .target(name: "ShrinkwrapKeras", dependencies: ["ShrinkwrapIR", "HDF5", "ZipArchive"]),
        // TensorFlow importer: frozen GraphDef .pb and SavedModel folders (saved_model.pb + the variables tensor bundle).
        .target(
            name: "ShrinkwrapTensorFlow",
            dependencies: ["ShrinkwrapIR", "TensorFlowSchema", .product(name: "SwiftProtobuf", package: "swift-protobuf")]
        ),
        .target(
            name: "ShrinkwrapCoreML",
            dependencies: ["ShrinkwrapIR", "CoreMLSchema", .product(name: "SwiftProtobuf", package: "swift-protobuf")]
        ),
        // libpng / libjpeg behind a C shim that turns their longjmp errors into messages (Linux; ImageIO on Apple platforms).
        .target(
            name: "CImageCodecs",
            linkerSettings: [.linkedLibrary("png", .when(platforms: [.linux])), .linkedLibrary("jpeg", .when(platforms: [.linux]))]
        ),
        // Model inputs: .npy / .npz, PNG / JPEG, text + vocabulary, seeded random inputs, SHA-256. No format
        // dependency: what it needs from a format's metadata (vocabulary keys) the facade passes in.
        .target(
            name: "ShrinkwrapData",
            dependencies: ["ShrinkwrapIR", "ZipArchive", .target(name: "CImageCodecs", condition: .when(platforms: [.linux]))]
        ),
        .target(
            name: "Shrinkwrap",
            dependencies: ["ShrinkwrapIR", "ShrinkwrapRuntime", "ShrinkwrapCompression", "ShrinkwrapONNX", "ShrinkwrapCoreML", "ShrinkwrapTFLite", "ShrinkwrapKeras",
                           "ShrinkwrapReport", "ShrinkwrapData", "ShrinkwrapTensorFlow"]
        ),
        .executableTarget(
            name: "ShrinkwrapCLI",
            dependencies: ["Shrinkwrap", "ShrinkwrapData", "ShrinkwrapIR", "ShrinkwrapCompression", "ShrinkwrapRuntime", "ShrinkwrapReport",
                           .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),
        .target(name: "ShrinkwrapTestSupport", dependencies: ["ShrinkwrapData", "ZipArchive"], path: "Tests/ShrinkwrapTestSupport"),
        .testTarget(name: "ShrinkwrapIRTests", dependencies: ["ShrinkwrapIR", "ShrinkwrapTestSupport"]),
        .testTarget(name: "ShrinkwrapCompressionTests", dependencies: ["ShrinkwrapCompression", "ShrinkwrapIR", "ShrinkwrapRuntime", "ShrinkwrapTestSupport"]),
        .testTarget(
            name: "ShrinkwrapCoreMLTests",
            dependencies: ["ShrinkwrapCoreML", "ShrinkwrapCompression", "ShrinkwrapIR", "CoreMLSchema", "Shrinkwrap", "ShrinkwrapData", "ShrinkwrapRuntime",
                           "ShrinkwrapTestSupport", .product(name: "SwiftProtobuf", package: "swift-protobuf")]
        ),
        .testTarget(name: "ShrinkwrapRuntimeTests", dependencies: ["CKernels", "ShrinkwrapIR", "ShrinkwrapRuntime", "ShrinkwrapTestSupport"]),
        .testTarget(
            name: "ShrinkwrapONNXTests",
            dependencies: ["Shrinkwrap", "ShrinkwrapData", "ShrinkwrapONNX", "ShrinkwrapRuntime", "ShrinkwrapIR", "ONNXSchema", "ShrinkwrapTestSupport",
                           .product(name: "SwiftProtobuf", package: "swift-protobuf")],
            exclude: ["conformance-exclusions.txt"]
        ),
        .testTarget(name: "ShrinkwrapTests", dependencies: ["Shrinkwrap", "ShrinkwrapData", "ShrinkwrapCompression", "ShrinkwrapIR", "ShrinkwrapRuntime", "ShrinkwrapONNX",
                                                     "ShrinkwrapReport", "ShrinkwrapTestSupport", "ZipArchive", "ShrinkwrapTFLite", "ShrinkwrapCoreML", "FlatBuffers"]),
        .testTarget(name: "ShrinkwrapDataTests", dependencies: ["ShrinkwrapData", "ShrinkwrapIR", "ShrinkwrapTestSupport", "ZipArchive"], exclude: ["Fixtures"]),
        .testTarget(name: "ShrinkwrapCLITests", dependencies: ["Shrinkwrap", "ShrinkwrapData", "ShrinkwrapCompression", "ShrinkwrapIR"]),
        .testTarget(name: "FlatBuffersTests", dependencies: ["FlatBuffers", "ShrinkwrapTestSupport"], exclude: ["Fixtures"]),
        .testTarget(name: "HDF5Tests", dependencies: ["HDF5", "ShrinkwrapTestSupport"], exclude: ["Fixtures"]),
        .testTarget(name: "ShrinkwrapKerasTests", dependencies: ["ShrinkwrapKeras", "ShrinkwrapIR", "ShrinkwrapRuntime", "ShrinkwrapTestSupport", "ZipArchive"],
                    exclude: ["Fixtures"]),
        .testTarget(name: "ShrinkwrapTensorFlowTests", dependencies: ["ShrinkwrapTensorFlow", "TensorFlowSchema", "ShrinkwrapIR", "ShrinkwrapRuntime", "ShrinkwrapTestSupport",
                                                                 .product(name: "SwiftProtobuf", package: "swift-protobuf")],
                    exclude: ["Fixtures"]),
        .testTarget(name: "ZipArchiveTests", dependencies: ["ZipArchive", "ShrinkwrapTestSupport"]),
        .testTarget(name: "ShrinkwrapTFLiteTests", dependencies: ["ShrinkwrapTFLite", "FlatBuffers", "ShrinkwrapIR", "ShrinkwrapRuntime", "ShrinkwrapTestSupport",
                                                           "ZipArchive"],
                    exclude: ["Fixtures"]),
        .testTarget(name: "ShrinkwrapReportTests", dependencies: ["ShrinkwrapReport", "ShrinkwrapIR"], exclude: ["Golden"]),
    ],
    swiftLanguageModes: [.v5]
)
