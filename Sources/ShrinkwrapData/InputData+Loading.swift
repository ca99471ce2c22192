import ShrinkwrapIR

// MARK: - Loading

extension InputData {
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
        guard !columns.isEmpty else { throw Error("no input data given") }
        // An input given one sample (an initial state, a mask, a fixed parameter) goes with every
        // sample of the others; all other inputs must have the same count.
        let counts = Set(columns.map(\.parts.count)).subtracting([1])
        if counts.count > 1 {
            let listed = columns.map { "\($0.name) has \($0.parts.count)" }.joined(separator: ", ")
            throw Error("input data do not pair up: \(listed) samples (inputs given one sample are used with every sample; the others need equal counts)")
        }
        let n = counts.first ?? 1
        var samples: [[String: Tensor]] = []
        var sources: [String] = []
        for k in 0..<n {
            var s: [String: Tensor] = [:]
            var from: [String] = []
            for c in columns {
                guard let part = c.parts.count == 1 ? c.parts.first : c.parts[k] else { throw Error("input '\(c.name)' has no samples") }
                s[c.name] = part.tensor
                from.append("\(c.name): \(part.source)")
            }
            samples.append(s)
            sources.append(from.joined(separator: ", "))
        }
        let summaries = columns.map { n > 1 && $0.parts.count == 1 ? $0.summary + " (with every sample)" : $0.summary }
        let description = "\(n) sample\(n == 1 ? "" : "s"): " + summaries.joined(separator: ", ")
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
}
