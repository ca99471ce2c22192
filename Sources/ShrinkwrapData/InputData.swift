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
    /// Needed for text files (unless the model's metadata keeps one under `metadataVocabulary`).
    public var vocabulary: Vocabulary?
    /// Where the model's metadata keeps a vocabulary, used for text files
    /// when `vocabulary` is nil; nil: the metadata is not searched. The
    /// facade's `DataOptions.forLoadedModels` sets the keys of the formats that keep one.
    public var metadataVocabulary: Vocabulary.MetadataKeys?
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
            metadataVocabulary = Result { try Vocabulary.fromMetadata(graph, keys: options.metadataVocabulary) }
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
}
