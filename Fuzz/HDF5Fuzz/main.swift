// libFuzzer target for the Keras importer (Sources/ShrinkwrapKeras) and the HDF5 reader under it
// (Sources/HDF5 on top of Sources/ZipArchive, whose error text comes from Sources/ShrinkwrapIR).
//
// Not a SwiftPM target: `make fuzz-keras` copies those modules' sources with their
// cross-module imports removed and compiles them with this file into one module
// (swiftc -sanitize=fuzzer,address), then runs it on the HDF5 test fixtures
// (Tests/HDF5Tests/Fixtures/*.h5) and the Keras ones (Tests/ShrinkwrapKerasTests/Fixtures:
// Keras 2 .h5, Keras 3 .keras ZIPs) as seeds.
//
// Every input goes through the whole Keras import (HDF5 or ZIP, the configuration's JSON,
// every layer's translation and weights), every constant of the graph decoded; then, as
// HDF5, it is opened and walked whole: every group (each object header once, so hard
// links forming cycles end), every attribute, every dataset read. The reader may throw;
// any crash, trap, sanitizer report, runaway allocation or hang is a bug.

/// What one dataset or attribute may take as stored: small, so that a damaged size field
/// cannot make a run slow or large.
let fuzzLimit = 1 << 22

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    if let graph = try? KerasImporter.importModel(bytes: bytes, file: "fuzz.keras", limit: fuzzLimit) {
        for c in graph.constants { _ = c.encoding.decoded().count }
    }
    guard let file = try? HDF5File(bytes: bytes, file: "fuzz.h5", limit: fuzzLimit) else { return 0 }
    var seen = Set<Int>()
    var pending: [HDF5Object] = [.group(file.root)]
    while let object = pending.popLast() {
        guard seen.insert(object.address).inserted else { continue }
        _ = try? object.attributes()
        switch object {
        case .dataset(let dataset):
            _ = try? dataset.read()
        case .group(let group):
            for name in (try? group.members()) ?? [] {
                if let child = try? group.member(name) { pending.append(child) }
                _ = try? group.attribute(name)
            }
        }
    }
    _ = try? file.object(at: "model_weights/dense/dense/kernel:0")
    return 0
}
