import StrataEngine

extension CatalogEntry {
    /// The whole keys `ranges` of `source`'s tree name one by one — each range an `==` or
    /// `IN` value's `KeyRange.startingWith(elements:)` — when each names at most one key of
    /// that tree: the tree's keys are one element (a primary key of one field, or a unique
    /// index of one field, whose keys are the value alone), and no other key starts with a
    /// complete element. Nil otherwise: a range then holds any number of keys (a non-unique
    /// index's keys end with the primary key; a composite key's first field names many).
    ///
    /// Such keys are looked up a batch at a time (`IndexedFetch`) instead of one scan each.
    func exactKeys(of source: ChosenAccess.Source, _ ranges: [KeyRange]) -> [[UInt8]]? {
        switch source {
        case .primaryKey:
            guard primaryKey.count == 1 else { return nil }
        case .index(let name):
            guard let index = indexes.first(where: { $0.name == name }), index.unique, index.fields.count == 1 else { return nil }
        }
        var keys: [[UInt8]] = []
        keys.reserveCapacity(ranges.count)
        for range in ranges {
            guard case .included(let key) = range.lower, range.upper == .excluded(KeyRange.afterElements(key)) else { return nil }
            keys.append(key)
        }
        return keys
    }
}
