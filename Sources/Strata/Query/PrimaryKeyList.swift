import StrataEngine

/// Primary keys gathered from trees (an index's entries, a union's or an intersection's
/// parts), held in one byte buffer with a span per key: no allocation per key. Sorted, it
/// names records in the order that costs least to read them (neighbours share leaves).
struct PrimaryKeyList {
    private var bytes: [UInt8] = []
    private var spans: [(start: Int, count: Int)] = []

    var count: Int { spans.count }

    mutating func append(_ key: UnsafeRawBufferPointer) {
        spans.append((bytes.count, key.count))
        bytes.append(contentsOf: key)
    }

    /// Sorts the keys by their bytes and drops repeated ones.
    mutating func sortRemovingDuplicates() {
        bytes.withUnsafeBytes { all in
            spans.sort { compareBytes(Self.key($0, in: all), Self.key($1, in: all)) < 0 }
            var kept = 0
            for span in spans {
                if kept > 0, compareBytes(Self.key(spans[kept - 1], in: all), Self.key(span, in: all)) == 0 { continue }
                spans[kept] = span
                kept += 1
            }
            spans.removeLast(spans.count - kept)
        }
    }

    /// The keys both sorted lists hold, sorted.
    func intersection(_ other: PrimaryKeyList) -> PrimaryKeyList {
        var result = PrimaryKeyList()
        bytes.withUnsafeBytes { mine in
            other.bytes.withUnsafeBytes { theirs in
                var (i, j) = (0, 0)
                while i < spans.count, j < other.spans.count {
                    let a = Self.key(spans[i], in: mine), b = Self.key(other.spans[j], in: theirs)
                    let order = compareBytes(a, b)
                    if order == 0 { result.append(a) }
                    if order <= 0 { i += 1 }
                    if order >= 0 { j += 1 }
                }
            }
        }
        return result
    }

    /// Visits the keys in the list's order (each buffer valid only during its call) until
    /// `body` returns false.
    func forEach(_ body: (UnsafeRawBufferPointer) throws -> Bool) rethrows {
        try bytes.withUnsafeBytes { all in
            for span in spans where try !body(Self.key(span, in: all)) { return }
        }
    }

    private static func key(_ span: (start: Int, count: Int), in all: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: all[span.start ..< span.start + span.count])
    }
}

extension ChosenAccess {
    /// The primary keys this access names, sorted, without duplicates: an index's entries
    /// hold them as values, the records tree as keys; a union merges its parts' keys, an
    /// intersection keeps the keys every part holds.
    ///
    /// - Throws: `StrataError` when a tree cannot be read.
    func primaryKeys(engine: any TreeReading, entry: CatalogEntry) throws -> PrimaryKeyList {
        let parts = keySets?.parts ?? [(source ?? .primaryKey, ranges)]
        func keys(of part: (source: Source, ranges: [KeyRange]), into list: inout PrimaryKeyList) throws {
            for range in part.ranges {
                switch part.source {
                case .primaryKey:
                    try engine.scan(entry.recordsTree, in: range, reverse: false) { key, _ in list.append(key); return true }
                case .index(let name):
                    try engine.scan(entry.indexTree(name), in: range, reverse: false) { _, primaryKey in list.append(primaryKey); return true }
                }
            }
        }
        if keySets?.combination == .intersection {
            var common: PrimaryKeyList?
            for part in parts {
                var list = PrimaryKeyList()
                try keys(of: part, into: &list)
                list.sortRemovingDuplicates()
                common = common.map { $0.intersection(list) } ?? list
                if common?.count == 0 { break }
            }
            return common ?? PrimaryKeyList()
        }
        var all = PrimaryKeyList()
        for part in parts { try keys(of: part, into: &all) }
        all.sortRemovingDuplicates()
        return all
    }

    /// The trees whose keys name the records, for error messages.
    var keyTrees: String {
        let sources = keySets?.parts.map(\.source) ?? [source ?? .primaryKey]
        return sources.map { if case .index(let name) = $0 { "index '\(name)'" } else { "the primary key" } }.joined(separator: " and ")
    }
}
