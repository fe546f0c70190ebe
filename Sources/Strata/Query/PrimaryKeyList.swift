import StrataEngine

/// Primary keys gathered from trees (an index's entries, a union's or an intersection's
/// parts), held in one byte buffer with a span per key: no allocation per key. Sorted, it
/// names records in the order that costs least to read them (neighbours share leaves).
/// The planner sorts an `IN` list's keys with it too.
struct PrimaryKeyList {
    private var bytes: [UInt8] = []
    private var spans: [(start: Int, count: Int)] = []

    var count: Int { spans.count }

    mutating func append(_ key: UnsafeRawBufferPointer) {
        spans.append((bytes.count, key.count))
        bytes.append(contentsOf: key)
    }

    /// Sorts the keys by their bytes and drops repeated ones.
    ///
    /// The keys are sorted by their first eight bytes after the prefix all of them share,
    /// as one integer each, and by their bytes only where those tie: a collection's primary
    /// keys share their tag byte, and an 8-byte id then fits one integer. (Comparing bytes
    /// at every step of the sort was ~200 instructions per key of a W1 scan.index, an
    /// eighth of the query's; callgrind.)
    mutating func sortRemovingDuplicates() {
        bytes.withUnsafeBytes { all in
            let shared = Self.sharedPrefixLength(of: spans, in: all)
            var sorted = spans.map { (head: Self.head(of: Self.key($0, in: all), after: shared), span: $0) }
            sorted.sort { a, b in
                a.head != b.head ? a.head < b.head : compareBytes(Self.key(a.span, in: all), Self.key(b.span, in: all)) < 0
            }
            spans.removeAll(keepingCapacity: true)
            var lastHead: UInt64 = 0
            for entry in sorted {
                // Keys with other heads are other keys; equal heads are compared by bytes.
                if let last = spans.last, entry.head == lastHead,
                   compareBytes(Self.key(last, in: all), Self.key(entry.span, in: all)) == 0 { continue }
                spans.append(entry.span)
                lastHead = entry.head
            }
        }
    }

    /// How many bytes every key starts with: at most the shortest key's length.
    private static func sharedPrefixLength(of spans: [(start: Int, count: Int)], in all: UnsafeRawBufferPointer) -> Int {
        guard let first = spans.first else { return 0 }
        let reference = key(first, in: all)
        var length = reference.count
        for span in spans.dropFirst() where length > 0 {
            let other = key(span, in: all)
            length = min(length, other.count)
            var i = 0
            while i < length, reference[i] == other[i] { i += 1 }
            length = i
        }
        return length
    }

    /// The head (`keyHead`) of `key` after its first `offset` bytes (at most its length).
    private static func head(of key: UnsafeRawBufferPointer, after offset: Int) -> UInt64 {
        keyHead(UnsafeRawBufferPointer(rebasing: key[offset...]))
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
            if let exact = entry.exactKeys(of: part.source, part.ranges) {
                // Points that each name one key: looked up a batch at a time, absent ones skipped.
                let tree = if case .index(let name) = part.source { entry.indexTree(name) } else { entry.recordsTree }
                let isIndex = part.source != .primaryKey
                var lookups = IndexedFetch(tree: tree, missing: nil)
                func gather(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) -> Bool {
                    list.append(isIndex ? value : key)
                    return true
                }
                for key in exact { _ = try key.withUnsafeBytes { try lookups.add($0, engine: engine, visit: gather) } }
                _ = try lookups.flush(engine: engine, visit: gather)
                return
            }
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
