/// Version 1 B-trees ("TREE"): node type 0 indexes an old-style group's
/// symbol table nodes, node type 1 a chunked dataset's chunks. Every node is
/// read at most once and each child must sit exactly one level below its
/// parent, so a hostile tree can neither loop nor blow up.
enum BTreeV1 {
    /// The deepest tree accepted (libhdf5 never comes close).
    static let maxLevel = 64

    /// Calls `visit` with the position of each leaf-level key (the key before the child) and the
    /// child's address, in tree order. `keySize` is the size of one key.
    static func walk(_ file: FileData, address: UInt64, type: Int, keySize: Int, context: String,
                     visit: (_ key: Int, _ child: UInt64) throws -> Void) throws {
        var seen = Set<Int>()
        var stack: [(UInt64, Int?)] = [(address, nil)]
        while let (nodeAddress, expectedLevel) = stack.popLast() {
            var (c, pos) = try file.structure(nodeAddress, "TREE", "B-tree node", versions: nil, context)
            guard seen.insert(pos).inserted else {
                throw file.error(pos, context, "B-tree node at offset \(pos) is reached twice (a cycle or a shared subtree)")
            }
            let nodeType = try c.u8("B-tree node type")
            guard nodeType == type else { throw c.fail(at: pos + 4, "B-tree node type \(nodeType), expected \(type)") }
            let level = try c.u8("B-tree node level")
            if let expectedLevel, level != expectedLevel {
                throw c.fail(at: pos + 5, "B-tree node level \(level), expected \(expectedLevel) below its parent")
            }
            guard level <= maxLevel else { throw c.fail(at: pos + 5, "B-tree node level \(level) is over \(maxLevel)") }
            let entries = try c.u16("B-tree entries used")
            try c.skip(2 * file.offsetSize, "B-tree sibling addresses")
            guard let entrySize = Checked.add(keySize, file.offsetSize), let body = Checked.mul(entries, entrySize),
                  let total = Checked.add(body, keySize) else {
                throw c.fail(at: pos, "B-tree node size overflows")
            }
            try c.need(total, "B-tree node keys and children")
            var children: [(Int, UInt64)] = []
            for _ in 0..<entries {
                let key = c.pos
                try c.skip(keySize)
                let at = c.pos
                guard let child = try c.address("B-tree child address") else {
                    throw c.fail(at: at, "B-tree child address is undefined")
                }
                children.append((key, child))
            }
            if level == 0 {
                for (key, child) in children { try visit(key, child) }
            } else {
                // Depth first, in order: push the children last to first.
                for (_, child) in children.reversed() { stack.append((child, level - 1)) }
            }
        }
    }
}
