import Foundation
import ShrinkwrapIR

/// A lookup table the user brings (`--lut table.json`): every weight maps to
/// its nearest entry. The table keeps the user's order (index j is entry j)
/// and is padded to 2^bits with its last entry; bits default to the fewest
/// that hold the table.
public struct CustomLUTCodec: WeightCodec {
    public init() {}
    public let mode = "custom-lut"
    public let summary = "your own lookup table from --lut FILE.json (a JSON array of numbers, or {\"lut\": [...]})"
    public let bitWidths: ClosedRange<Int>? = 1...8
    public let granularities: [GranularityKind] = [.perTensor]
    public let storage = WeightStorageKind.palette
    /// The table is the user's: only the choice of entries can use calibration data.
    public let methods: [CompressionMethod] = [.nearest, .gptq]
    /// A table fits one model at best: a sweep does not try it unless asked.
    public let inDefaultSweep = false
    public static let table = CodecOption(key: "lut", kind: .table, help: "the table, a JSON array of numbers (a file; in a plan, an array or a file).")
    public let options = [CustomLUTCodec.table]

    /// The table (required); without chosen bits, the fewest that hold it.
    public func apply(_ settings: [String: CodecSetting], bitsGiven: Bool, to o: inout CodecOptions, origin: SettingOrigin) throws(CompressionError) {
        let lut = Self.table.key
        switch settings[lut] {
        case .numbers(let values)?: o.lut = values
        case .file(let path)?: o.lut = try Self.loadTable(path)
        case .flag?: throw origin.error("\(origin.name(lut)) needs a table")
        case nil: throw origin.error("\(origin.name("mode")) \(mode) needs \(origin.name(lut)) (a JSON array of numbers)")
        }
        guard let table = o.lut, !table.isEmpty else { throw origin.error("\(origin.name(lut)) is empty") }
        if !bitsGiven { o.bits = Self.bits(for: table.count) }
        if table.count > 1 << o.bits { throw origin.error("a table of \(table.count) entries does not fit \(o.bits) bits") }
    }

    public func encode(_ w: WeightInput, _ o: CodecOptions) throws(CompressionError) -> CodecResult {
        guard let lut = o.lut, !lut.isEmpty else {
            throw .badLUT(file: "(none)", reason: "mode custom-lut needs a table (--lut FILE.json)")
        }
        guard lut.count <= 1 << o.bits else {
            throw .badLUT(file: "(table)", reason: "\(lut.count) entries do not fit \(o.bits) bits")
        }
        let (p, notes) = try palettize(w, bits: o.bits, granularity: o.granularity, method: o.method) { _, _ in lut }
        return CodecResult(encoding: .palette(p), notes: notes)
    }

    /// Reads a table: a JSON array of finite numbers, or an object with a "lut" array.
    public static func loadTable(_ path: String) throws(CompressionError) -> [Float] {
        guard let data = FileManager.default.contents(atPath: path) else { throw .badLUT(file: path, reason: "cannot read the file") }
        struct Wrapped: Decodable { var lut: [Double] }
        let values: [Double]
        if let a = try? JSONDecoder().decode([Double].self, from: data) {
            values = a
        } else if let o = try? JSONDecoder().decode(Wrapped.self, from: data) {
            values = o.lut
        } else {
            throw .badLUT(file: path, reason: "expected a JSON array of numbers, or an object with a \"lut\" array of numbers")
        }
        guard !values.isEmpty else { throw .badLUT(file: path, reason: "the table is empty") }
        guard values.count <= 256 else { throw .badLUT(file: path, reason: "\(values.count) entries; at most 256 (8 bits)") }
        if let i = values.firstIndex(where: { !Float($0).isFinite }) {
            throw .badLUT(file: path, reason: "entry \(i) (\(values[i])) is not a finite float32")
        }
        return values.map { Float($0) }
    }

    /// The fewest bits that index a table of `count` entries (at least 1).
    public static func bits(for count: Int) -> Int {
        var b = 1
        while (1 << b) < count { b += 1 }
        return b
    }
}
