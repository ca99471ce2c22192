import Foundation
import ShrinkwrapIR

/// The inputs a sweep or comparison runs through the original and the
/// compressed model.
public struct InputSet: Sendable {
    /// One entry per sample: input name → tensor, in a deterministic order (sorted file names).
    public var samples: [[String: Tensor]]
    /// Where each sample came from: the file ("data/img3.npy"), an element of a
    /// batch file ("data/batch.npy[2]"), "x: a/1.npy, y: b/1.npy" for
    /// NAME=PATH pairs, or "random #k" (k from 0).
    public var sources: [String]
    /// One line for reports, e.g. "24 .npy files in data/".
    public var description: String
    /// `InputData.sha256(of: samples)`: see there for the exact scheme.
    public var sha256: String
    /// True when the samples are synthetic (`InputData.random`).
    public var random: Bool

    /// A set over `samples`; the hash is computed here.
    public init(samples: [[String: Tensor]], sources: [String], description: String, random: Bool) {
        self.samples = samples
        self.sources = sources
        self.description = description
        self.random = random
        self.sha256 = InputData.sha256(of: samples)
    }
}

/// How image and text files become inputs (ignored for .npy / .npz).
public struct DataOptions: Sendable, Equatable {
    public var image = ImagePreprocessing()
    /// Needed for text files.
    public var vocabulary: Vocabulary?
    /// Token ids per sentence; nil takes the input's fixed length.
    public var sequenceLength: Int?
    public init() {}
}

/// Loading model inputs from .npy / .npz files, PNG / JPEG images and text
/// files, and deterministic random inputs.
public enum InputData {
    public struct Error: UserFacingError, Equatable {
        public let reason: String
        public var description: String { reason.escapingControlCharacters }
        init(_ reason: String) { self.reason = reason }
    }

    /// `specs`: folders, .npy / .npz / .png / .jpg / .txt files, or NAME=PATH
    /// for multi-input models (NAME=FOLDER pairs the sorted files of each
    /// folder by position).
    ///
    /// An image is one sample, prepared by `options.image` (see
    /// `ImagePreprocessing`); a text file gives one sample per non-blank line,
    /// tokenized with `options.vocabulary` (see `Vocabulary.encode`).
    ///
    /// Without names, a single-input model takes each .npy as one sample and
    /// an .npz holds one sample with one member per input name (or a single
    /// member for a single-input model); folders contribute their .npy and
    /// .npz files (not recursively, hidden files skipped) sorted by the UTF-8
    /// bytes of their names, and the specs' samples follow in the order given.
    /// A tensor with one more leading axis than its input (e.g. [N, 3, 224, 224]
    /// for [3, 224, 224]), or whose leading axis is N where the input's is a
    /// fixed 1 (for [1, 3, 224, 224]), is split into N samples. Every sample
    /// is checked against the input's dtype and shape (fixed dimensions must
    /// match, symbolic ones take any size); float64 becomes float32 and int32 /
    /// int64 become each other when the input wants the other type.
    public static func load(_ specs: [String], graph: Graph, options: DataOptions = DataOptions()) throws -> InputSet {
        let inputs = graph.runtimeInputs
        guard !inputs.isEmpty else { throw Error("the model has no runtime inputs to feed data to") }
        guard !specs.isEmpty else { throw Error("no input data given") }
        let parsed = try specs.map { try parse($0, inputs: inputs) }
        let namedCount = parsed.filter { $0.name != nil }.count
        let reader = Reader(graph: graph, options: options)
        var set: InputSet
        if namedCount == 0 {
            set = try loadUnnamed(parsed.map(\.path), inputs: inputs, reader: reader)
        } else {
            guard namedCount == parsed.count else {
                throw Error("mixing NAME=PATH and plain paths in the input data is not supported: give every input as NAME=PATH")
            }
            set = try loadNamed(parsed.map { (name: $0.name ?? "", path: $0.path) }, inputs: inputs, reader: reader)
        }
        if options.image.isSet && reader.images == 0 {
            throw Error("image options (--resize, --center-crop, --scale, --mean, --std, --color, --layout) were given but the data has no .png / .jpg images")
        }
        if options.vocabulary != nil && reader.texts == 0 {
            throw Error("--vocab was given but the data has no .txt files")
        }
        if reader.images > 0, !options.image.summary.isEmpty {
            set.description += " (\(options.image.summary))"
        }
        if reader.images > 0 {
            let notes = inputs.compactMap { i in
                ImageData.metadataNormalization(for: i, graph: graph, options: options.image).map { "\(i.name): mean \($0.mean), std \($0.std)" }
            }
            if !notes.isEmpty { set.description += " (normalization from the model's metadata: \(notes.joined(separator: "; ")))" }
        }
        if reader.texts > 0, options.vocabulary == nil, let v = try? reader.metadataVocabulary.get() {
            set.description += " (vocabulary: \(v.source))"
        }
        return set
    }

    /// Reads one data file as samples of one input; counts what it read.
    final class Reader {
        let graph: Graph
        let options: DataOptions
        var images = 0
        var texts = 0
        /// The vocabulary kept in the model's metadata (used for text when no --vocab is given).
        let metadataVocabulary: Result<Vocabulary?, Swift.Error>
        init(graph: Graph, options: DataOptions) {
            self.graph = graph
            self.options = options
            metadataVocabulary = Result { try Vocabulary.fromMetadata(graph) }
        }

        /// Whether .txt files in folders are data: a vocabulary is at hand.
        var readsText: Bool { options.vocabulary != nil || (try? metadataVocabulary.get()) != nil }

        /// The samples a .npy, image or text file gives for `info`.
        func samples(_ f: DataFile, for info: ValueInfo) throws -> [(tensor: Tensor, source: String)] {
            switch f.kind {
            case .npy:
                let parts = try fit(try readNPY(f), to: info, file: f.display)
                return parts.enumerated().map { k, t in (t, parts.count == 1 ? f.display : "\(f.display)[\(k)]") }
            case .image:
                images += 1
                let t = try ImageData.tensor(fromFile: f.url, display: f.display, for: info, graph: graph, options: options.image)
                return [(try convert(t, to: info, file: f.display), f.display)]
            case .text:
                texts += 1
                return try TextData.tensors(fromFile: f.url, display: f.display, for: info, vocabulary: try options.vocabulary ?? metadataVocabulary.get(),
                                            sequenceLength: options.sequenceLength)
            case .npz:
                throw Error("\(f.display): internal: .npz files are read per member")
            }
        }
    }

    /// Deterministic random inputs (same seed → same bytes on every machine):
    /// float inputs standard normal (SplitMix64 + Box–Muller, with a
    /// logarithm and sine/cosine computed here from IEEE basic operations
    /// only, so no platform math library is involved), integer inputs uniform
    /// in 0..<vocab, bool inputs fair coin flips. Symbolic and unknown
    /// dimensions become 1. One stream is drawn sample by sample, inputs in
    /// graph order, so the first k samples of a longer set equal a set of k.
    public static func random(count: Int, seed: UInt64, graph: Graph, vocab: Int = 2) throws -> InputSet {
        let inputs = graph.runtimeInputs
        guard !inputs.isEmpty else { throw Error("the model has no runtime inputs to feed data to") }
        guard count >= 1 else { throw Error("random inputs: sample count must be at least 1 (got \(count))") }
        guard vocab >= 1 else { throw Error("random inputs: vocabulary size must be at least 1 (got \(vocab))") }
        var plans: [(info: ValueInfo, shape: [Int], elements: Int, dtype: DType)] = []
        var perSample = 0
        for i in inputs {
            guard let dims = i.shape else {
                throw Error("input '\(i.name)' has unknown rank, so random data has no shape to take; give real data with --data")
            }
            let shape = dims.map { $0.value ?? 1 }
            guard let n = checkedElementCount(shape, limit: 1 << 28) else {
                throw Error("input '\(i.name)' shape \(shape) is too large for random data")
            }
            plans.append((i, shape, n, i.dtype ?? .float32))
            perSample += n
        }
        let (total, overflow) = perSample.multipliedReportingOverflow(by: count)
        guard !overflow, total <= 1 << 30 else {
            throw Error("random inputs: \(count) samples of \(perSample) elements are too many")
        }
        var rng = Normal(seed: seed)
        var samples: [[String: Tensor]] = []
        var sources: [String] = []
        samples.reserveCapacity(count)
        for k in 0..<count {
            var sample: [String: Tensor] = [:]
            for p in plans {
                let t: Tensor
                switch p.dtype {
                case .float32, .float64:
                    t = Tensor((0..<p.elements).map { _ in Float(rng.next()) }, shape: p.shape, dtype: p.dtype)
                case .float16:
                    t = Tensor((0..<p.elements).map { _ in Half.round(Float(rng.next())) }, shape: p.shape, dtype: .float16)
                case .bfloat16:
                    t = Tensor((0..<p.elements).map { _ in Half.float(fromBFloatBits: Half.bfloatBits(from: Float(rng.next()))) },
                               shape: p.shape, dtype: .bfloat16)
                case .bool:
                    t = Tensor(bools: (0..<p.elements).map { _ in rng.bits.next() >> 63 == 1 }, shape: p.shape)
                default:
                    t = Tensor(ints: (0..<p.elements).map { _ in Int64(rng.bits.next().multipliedFullWidth(by: UInt64(vocab)).high) },
                               shape: p.shape, dtype: p.dtype)
                }
                sample[p.info.name] = t
            }
            samples.append(sample)
            sources.append("random #\(k)")
        }
        let what = count == 1 ? "1 random sample" : "\(count) random samples"
        return InputSet(samples: samples, sources: sources, description: "\(what) (seed \(seed))", random: true)
    }

    /// The hex SHA-256 identifying a list of samples. The hashed bytes are:
    ///
    ///     "shrinkwrap-inputs/1\n"
    ///     u64(sample count)
    ///     per sample, in order:
    ///       u64(input count)
    ///       per input, names sorted by their UTF-8 bytes:
    ///         u64(name byte count) name-UTF-8
    ///         u64(dtype name byte count) dtype-name-UTF-8   ("float32", "int64", …)
    ///         u64(rank) u64(dim) for each dimension
    ///         u64(data byte count) data
    ///
    /// where u64 is an unsigned 64-bit little-endian integer and data is the
    /// elements in row-major order, each little-endian in the dtype's width —
    /// the bytes a .npy of that tensor holds after its header (float16 and
    /// bfloat16 as their 16-bit patterns, bool as one 0/1 byte).
    public static func sha256(of samples: [[String: Tensor]]) -> String {
        var h = SHA256Hasher()
        var buffer: [UInt8] = []
        func u64(_ v: Int) {
            withUnsafeBytes(of: UInt64(truncatingIfNeeded: v).littleEndian) { h.update($0) }
        }
        func string(_ s: String) {
            let b = Array(s.utf8)
            u64(b.count)
            h.update(b)
        }
        h.update(Array("shrinkwrap-inputs/1\n".utf8))
        u64(samples.count)
        for sample in samples {
            u64(sample.count)
            for name in sample.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
                guard let t = sample[name] else { continue }
                string(name)
                string(t.dtype.rawValue)
                u64(t.shape.count)
                for d in t.shape { u64(d) }
                buffer.removeAll(keepingCapacity: true)
                t.appendLittleEndianBytes(to: &buffer)
                u64(buffer.count)
                h.update(buffer)
            }
        }
        return SHA256.hexString(h.finalize())
    }

    // MARK: - Specs and files

    /// A spec is NAME=PATH when the text before one of its '=' signs is a
    /// runtime input's name; otherwise it is a path.
    static func parse(_ spec: String, inputs: [ValueInfo]) throws -> (name: String?, path: String) {
        guard !spec.isEmpty else { throw Error("empty input data path") }
        var i = spec.startIndex
        while let eq = spec[i...].firstIndex(of: "=") {
            let name = String(spec[..<eq])
            if inputs.contains(where: { $0.name == name }) {
                let path = String(spec[spec.index(after: eq)...])
                guard !path.isEmpty else { throw Error("'\(spec)': no path after '\(name)='") }
                return (name, path)
            }
            i = spec.index(after: eq)
        }
        if let eq = spec.firstIndex(of: "="), eq != spec.startIndex, !FileManager.default.fileExists(atPath: spec) {
            let names = inputs.map(\.name).joined(separator: ", ")
            throw Error("'\(spec)': the model has no input '\(spec[..<eq])' (its inputs: \(names)), and no file has that name")
        }
        return (nil, spec)
    }

    enum Kind { case npy, npz, image, text }

    struct DataFile {
        var url: URL
        /// The path as shown to the user: the spec, or the spec's folder joined with the file name.
        var display: String
        var kind: Kind
    }

    /// What one spec expands to: the files, and whether the spec was a folder.
    struct Expansion {
        var path: String
        var files: [DataFile]
        var isFolder: Bool
    }

    static func kind(of name: String) -> Kind? {
        let ext = URL(fileURLWithPath: name).pathExtension.lowercased()
        if ext == "npy" { return .npy }
        if ext == "npz" { return .npz }
        if ImageData.extensions.contains(ext) { return .image }
        if TextData.extensions.contains(ext) { return .text }
        return nil
    }

    static let kindsText = ".npy, .npz, .png, .jpg or .txt"

    /// A file, or a folder's data files. In a folder, .txt files count as
    /// data only when `text` is true (a vocabulary was given); otherwise
    /// they are left alone like any other file (a README, labels.txt).
    static func expand(_ path: String, text: Bool) throws -> Expansion {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw Error("\(path): no such file or folder")
        }
        let url = URL(fileURLWithPath: path)
        guard isDirectory.boolValue else {
            guard let k = kind(of: path) else { throw Error("\(path): not a \(kindsText) file (input data are NumPy arrays, PNG / JPEG images or text)") }
            return Expansion(path: path, files: [DataFile(url: url, display: path, kind: k)], isFolder: false)
        }
        let names: [String]
        do { names = try FileManager.default.contentsOfDirectory(atPath: path) } catch {
            throw Error("\(path): cannot list folder: \((error as NSError).localizedDescription)")
        }
        let visible = names.filter { !$0.hasPrefix(".") }
        var files: [DataFile] = []
        var others: [String] = []
        let prefix = path.hasSuffix("/") ? path : path + "/"
        for name in visible.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
            let fileURL = url.appendingPathComponent(name)
            var sub: ObjCBool = false
            guard FileManager.default.fileExists(atPath: fileURL.path, isDirectory: &sub), !sub.boolValue else { continue }
            if let k = kind(of: name), k != .text || text {
                files.append(DataFile(url: fileURL, display: prefix + name, kind: k))
            } else {
                others.append(name)
            }
        }
        if files.isEmpty {
            if others.isEmpty { throw Error("\(prefix): the folder has no files (expected \(kindsText) input data)") }
            let shown = others.prefix(3).joined(separator: ", ") + (others.count > 3 ? ", …" : "")
            throw Error("\(prefix): no \(kindsText) files in the folder (found \(others.count) other file\(others.count == 1 ? "" : "s"): \(shown))")
        }
        return Expansion(path: prefix, files: files, isFolder: true)
    }

    static func readNPY(_ f: DataFile) throws -> Tensor {
        do { return try NPY.read(f.url) } catch let e as NPY.Error {
            throw Error("\(f.display): \(e.reason)")
        }
    }

    static func readNPZ(_ f: DataFile) throws -> [(name: String, tensor: Tensor)] {
        let members: [(name: String, tensor: Tensor)]
        do { members = try NPZ.read(f.url) } catch let e as NPZ.Error {
            throw Error(NPZ.Error(file: f.display, member: e.member, reason: e.reason).description)
        }
        guard !members.isEmpty else { throw Error("\(f.display): the archive holds no arrays") }
        return members
    }

    // MARK: - Loading

    static func loadUnnamed(_ paths: [String], inputs: [ValueInfo], reader: Reader) throws -> InputSet {
        var samples: [[String: Tensor]] = []
        var sources: [String] = []
        var summaries: [String] = []
        var fileCount = 0
        for path in paths {
            let ex = try expand(path, text: reader.readsText)
            let before = samples.count
            for f in ex.files {
                fileCount += 1
                switch f.kind {
                case .npy, .image, .text:
                    guard inputs.count == 1 else {
                        throw Error("\(f.display): the model has \(inputs.count) inputs (\(inputs.map(\.name).joined(separator: ", "))) but this file feeds one; use .npz files with one member per input, or NAME=PATH for each input")
                    }
                    for (t, source) in try reader.samples(f, for: inputs[0]) {
                        samples.append([inputs[0].name: t])
                        sources.append(source)
                    }
                case .npz:
                    let members = try readNPZ(f)
                    var perInput: [(name: String, parts: [Tensor])] = []
                    if inputs.count == 1 && members.count == 1 {
                        perInput = [(inputs[0].name, try fit(members[0].tensor, to: inputs[0], file: "\(f.display)[\(members[0].name)]"))]
                    } else {
                        let inputNames = inputs.map(\.name)
                        for m in members where !inputNames.contains(m.name) {
                            throw Error("\(f.display): member '\(m.name)' is not an input of the model (its inputs: \(inputNames.joined(separator: ", ")))")
                        }
                        for i in inputs {
                            guard let m = members.first(where: { $0.name == i.name }) else {
                                throw Error("\(f.display): no member for input '\(i.name)' (members: \(members.map(\.name).joined(separator: ", ")))")
                            }
                            perInput.append((i.name, try fit(m.tensor, to: i, file: "\(f.display)[\(m.name)]")))
                        }
                    }
                    let counts = perInput.map(\.parts.count)
                    guard let n = counts.first, counts.allSatisfy({ $0 == n }) else {
                        let listed = perInput.map { "\($0.name): \($0.parts.count)" }.joined(separator: ", ")
                        throw Error("\(f.display): members hold different numbers of samples (\(listed))")
                    }
                    for k in 0..<n {
                        var s: [String: Tensor] = [:]
                        for p in perInput { s[p.name] = p.parts[k] }
                        samples.append(s)
                        sources.append(n == 1 ? f.display : "\(f.display)[\(k)]")
                    }
                }
            }
            summaries.append(summary(ex, samples: samples.count - before))
        }
        let description = paths.count == 1
            ? summaries[0]
            : "\(samples.count) samples from \(fileCount) files (\(summaries.joined(separator: "; ")))"
        return InputSet(samples: samples, sources: sources, description: description, random: false)
    }

    static func loadNamed(_ specs: [(name: String, path: String)], inputs: [ValueInfo], reader: Reader) throws -> InputSet {
        var seen = Set<String>()
        for s in specs where !seen.insert(s.name).inserted { throw Error("input '\(s.name)' is given twice") }
        for i in inputs where !seen.contains(i.name) {
            throw Error("no data for input '\(i.name)' (\(i.dtype?.rawValue ?? "?") \(i.shapeDescription)); give \(i.name)=PATH")
        }
        // Specs in the model's input order, each flattened to its samples.
        var columns: [(name: String, parts: [(tensor: Tensor, source: String)], summary: String)] = []
        for i in inputs {
            guard let spec = specs.first(where: { $0.name == i.name }) else { continue }
            let ex = try expand(spec.path, text: reader.readsText)
            var parts: [(tensor: Tensor, source: String)] = []
            for f in ex.files {
                let tensor: Tensor
                let label: String
                switch f.kind {
                case .npy, .image, .text:
                    parts += try reader.samples(f, for: i)
                    continue
                case .npz:
                    let members = try readNPZ(f)
                    if members.count == 1 {
                        tensor = members[0].tensor
                        label = "\(f.display)[\(members[0].name)]"
                    } else if let m = members.first(where: { $0.name == i.name }) {
                        tensor = m.tensor
                        label = "\(f.display)[\(m.name)]"
                    } else {
                        throw Error("\(f.display): \(members.count) members and none named '\(i.name)' (members: \(members.map(\.name).joined(separator: ", ")))")
                    }
                }
                let split = try fit(tensor, to: i, file: label)
                for (k, t) in split.enumerated() { parts.append((t, split.count == 1 ? f.display : "\(f.display)[\(k)]")) }
            }
            columns.append((i.name, parts, "\(i.name)=\(summary(ex, samples: parts.count))"))
        }
        guard let n = columns.first?.parts.count else { throw Error("no input data given") }
        if let odd = columns.first(where: { $0.parts.count != n }), let first = columns.first {
            throw Error("input data do not pair up: \(first.name) has \(n) sample\(n == 1 ? "" : "s") but \(odd.name) has \(odd.parts.count)")
        }
        var samples: [[String: Tensor]] = []
        var sources: [String] = []
        for k in 0..<n {
            var s: [String: Tensor] = [:]
            for c in columns { s[c.name] = c.parts[k].tensor }
            samples.append(s)
            sources.append(columns.map { "\($0.name): \($0.parts[k].source)" }.joined(separator: ", "))
        }
        let description = "\(n) sample\(n == 1 ? "" : "s"): " + columns.map(\.summary).joined(separator: ", ")
        return InputSet(samples: samples, sources: sources, description: description, random: false)
    }

    /// "24 .npy files in data/", "data/batch.npy (8 samples)", "data/x.npz".
    static func summary(_ ex: Expansion, samples: Int) -> String {
        let files = ex.files.count
        let extra = samples == files ? "" : " (\(samples) sample\(samples == 1 ? "" : "s"))"
        guard ex.isFolder else { return ex.path + extra }
        let names: [(Kind, String, String)] = [(.npy, ".npy file", ".npy"), (.npz, ".npz file", ".npz"), (.image, "image", "images"),
                                               (.text, "text file", "text")]
        let counts = names.map { k in (k, ex.files.filter { $0.kind == k.0 }.count) }.filter { $0.1 > 0 }
        let s = files == 1 ? "" : "s"
        let kinds: String
        if counts.count == 1, let only = counts.first {
            kinds = only.0.1 + s
        } else {
            kinds = "files (" + counts.map { "\($0.1) \($0.0.2)" }.joined(separator: ", ") + ")"
        }
        return "\(files) \(kinds) in \(ex.path)\(extra)"
    }

    // MARK: - Fitting a tensor to an input

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
    static func convert(_ t: Tensor, to info: ValueInfo, file: String) throws -> Tensor {
        guard let want = info.dtype, want != t.dtype else { return t }
        var out = t
        switch (t.dtype, want) {
        case (.float64, .float32), (.int32, .int64):
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

// MARK: - Deterministic normal numbers

/// SplitMix64.
struct SplitMix64 {
    var state: UInt64
    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Standard normal numbers by Box–Muller over SplitMix64, both values of
/// each pair used. The logarithm, sine and cosine are computed here with
/// IEEE +, −, ×, ÷ and square root only (all correctly rounded), so the
/// values are bit-identical on every platform.
struct Normal {
    var bits: SplitMix64
    var spare: Double?

    init(seed: UInt64) { bits = SplitMix64(seed: seed) }

    mutating func next() -> Double {
        if let s = spare { spare = nil; return s }
        let u1 = Double((bits.next() >> 11) + 1) / 9_007_199_254_740_992  // (0, 1]
        let u2 = Double(bits.next() >> 11) / 9_007_199_254_740_992  // [0, 1)
        let r = (-2 * Normal.log(u1)).squareRoot()
        let (s, c) = Normal.sinCos2Pi(u2)
        spare = r * s
        return r * c
    }

    static let ln2 = 0.693_147_180_559_945_3

    /// Natural logarithm of a positive finite normal number.
    static func log(_ x: Double) -> Double {
        var e = Double(x.exponent)
        var m = x.significand  // [1, 2)
        if m > 1.414_213_562_373_095_1 { m /= 2; e += 1 }
        // ln m = 2 atanh(s), s = (m − 1)/(m + 1), |s| ≤ 0.172: odd series to s^31.
        let s = (m - 1) / (m + 1)
        let s2 = s * s
        var p = 0.0
        for c in logCoefficients.reversed() { p = p * s2 + c }
        return 2 * s * p + e * ln2
    }

    /// (sin 2πv, cos 2πv) for v in [0, 1).
    static func sinCos2Pi(_ v: Double) -> (Double, Double) {
        let t = v * 4  // exact
        let q = Int(t)  // quadrant 0…3
        var f = t - Double(q)  // exact, [0, 1)
        let swap = f > 0.5
        if swap { f = 1 - f }  // exact
        let x = f * (Double.pi / 2)  // [0, π/4]
        let x2 = x * x
        // Taylor series to x^19 / x^20: error below 1e-19 on [0, π/4].
        var sinP = 0.0, cosP = 0.0
        for c in sinCoefficients.reversed() { sinP = sinP * x2 + c }
        for c in cosCoefficients.reversed() { cosP = cosP * x2 + c }
        var sn = x * sinP, cs = cosP
        if swap { (sn, cs) = (cs, sn) }
        switch q {
        case 0: return (sn, cs)
        case 1: return (cs, -sn)
        case 2: return (-sn, -cs)
        default: return (-cs, sn)
        }
    }

    /// 1/(2k + 1) for k = 0…15.
    static let logCoefficients: [Double] = (0...15).map { 1 / Double(2 * $0 + 1) }
    /// (−1)^k / (2k + 1)! for k = 0…9 and (−1)^k / (2k)! for k = 0…10.
    static let sinCoefficients: [Double] = (0...9).map { sign($0) / factorial(2 * $0 + 1) }
    static let cosCoefficients: [Double] = (0...10).map { sign($0) / factorial(2 * $0) }

    private static func sign(_ k: Int) -> Double { k % 2 == 0 ? 1 : -1 }

    private static func factorial(_ n: Int) -> Double {
        var f = 1.0
        if n > 1 { for i in 2...n { f *= Double(i) } }
        return f
    }
}
