import Foundation
import ShrinkwrapCompression
import ShrinkwrapIR

extension ModelFormat {
    /// Every reason this format cannot hold `graph` compressed by `plan`,
    /// found before compressing and listed at once: each rule whose weights
    /// the format does not store, and each input dimension beyond the batch
    /// that is not fixed where the format needs fixed shapes. Empty when it can.
    public func conflicts(graph: Graph, plan: CompressionPlan?, options: ExportOptions = ExportOptions()) -> [String] {
        var out: [String] = []
        let storedWeights = storedWeights(options)
        let title = options.target.map { "\(self.title) for \($0)" } ?? self.title
        if let plan {
            var rules: [(String, RuleChoice?)] = [("the global rule", plan.global)]
            rules += plan.byOpType.keys.sorted().map { ("the rule for op type \($0)", plan.byOpType[$0]) }
            rules += plan.byName.keys.sorted().map { ("the rule for '\($0)'", plan.byName[$0]) }
            for case let (place, .compress(rule)?) in rules {
                guard let codec = try? WeightCodecs.codec(named: rule.mode) else { continue }
                let form = codec.form(rule.options)
                if let why = storedWeights.refusal(form) { out.append("\(place) (\(rule.summary)) makes \(form) weights; \(title) stores \(why)") }
            }
        }
        if flexibleShapes == nil {
            for flex in graph.metadata.flexibleShapes {
                out.append("input '\(flex.input)' may take \(flex.description); \(title) keeps one shape per input "
                           + "(give --input-shape one shape, e.g. '\(flex.input)=\(flex.defaultShape.map(String.init).joined(separator: ","))')")
            }
        }
        if needsFixedShapes {
            let constants = Set(graph.constants.map(\.name))
            for input in graph.inputs where !constants.contains(input.name) {
                let shape = input.shape ?? []
                let free = shape.indices.dropFirst().filter { shape[$0].value == nil }
                guard !free.isEmpty else { continue }
                let which = free.map { "\($0) (\(shape[$0]))" }.joined(separator: ", ")
                let suggestion = shape.enumerated().map { axis, d in d.value.map(String.init) ?? (axis == 0 ? "1" : "<d\(axis)>") }
                out.append("input '\(input.name)' \(input.shapeDescription): dimension\(free.count == 1 ? "" : "s") \(which) "
                           + "\(free.count == 1 ? "is" : "are") not fixed; \(title) needs fixed shapes beyond the batch axis "
                           + "(pin with --input-shape '\(input.name)=\(suggestion.joined(separator: ","))')")
            }
        }
        return out
    }
}

extension Models {
    /// Throws, listing every conflict, when the format of `path` cannot hold `graph` compressed by `plan`.
    public static func checkStorable(_ graph: Graph, plan: CompressionPlan?, path: String, options: ExportOptions = ExportOptions()) throws {
        guard let f = ModelFormats.writer(forExtension: (path as NSString).pathExtension) else { return }
        let found = f.conflicts(graph: graph, plan: plan, options: options)
        guard !found.isEmpty else { return }
        throw AtomicFile.Error(description: "\(path): cannot be written as asked (\(found.count) conflict\(found.count == 1 ? "" : "s")): "
                               + found.joined(separator: "; "))
    }
}
