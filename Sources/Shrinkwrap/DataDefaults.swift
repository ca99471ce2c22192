import ShrinkwrapData
import ShrinkwrapIR
import ShrinkwrapTFLite

// What data loading needs to know about formats, passed in from here:
// ShrinkwrapData sits beside the formats and imports none of them.

extension Vocabulary.MetadataKeys {
    /// Where the TFLite importer keeps the vocabulary of a Model Maker text
    /// classifier (RegexTokenizerOptions' vocab_file), and the split pattern
    /// `Vocabulary.words` implements.
    public static let tflite = Vocabulary.MetadataKeys(
        vocabulary: TFLiteMetadata.vocabularyKey, fileName: TFLiteMetadata.vocabularyFileKey,
        tokenizerPattern: TFLiteMetadata.tokenizerRegexKey, wordsPattern: TFLiteMetadata.modelMakerRegex)
}

extension Vocabulary {
    /// The vocabulary a model read by `Models.load` keeps in its metadata
    /// (a TFLite model's: `MetadataKeys.tflite`); see `fromMetadata(_:keys:)`.
    public static func fromMetadata(_ graph: Graph) throws -> Vocabulary? {
        try fromMetadata(graph, keys: .tflite)
    }
}

extension DataOptions {
    /// Options for models read by `Models.load`: text files without a
    /// given vocabulary take the one in the model's metadata (TFLite), as the
    /// command line does.
    public static var forLoadedModels: DataOptions {
        var o = DataOptions()
        o.metadataVocabulary = .tflite
        return o
    }
}
