/// One time a compaction held writers back, and what the time went on.
///
/// A compaction holds writers back only at its end: for slices of the commits they made
/// while it copied (when they commit about as fast as it carries them over beside them;
/// a slice appends those made since the pass beside them before it, and replays a slice of
/// what waits), then for the swap. `CompactionResult.longestHold` is the longest of them, with its parts,
/// so a pause longer than expected says whether carrying commits, a sync or the rename took
/// it.
///
/// ```swift
/// let result = try db.compact()
/// if let hold = result.longestHold {
///     print(hold)   // "swap of 2 commits (18 KB): 1.9 ms (read 0.05, write 0.02, replay 19 KB 0.1, sync 1.5, rename 0.2)"
/// }
/// ```
public struct CompactionHold: Sendable, Equatable, CustomStringConvertible {
    /// What a hold was for.
    public enum Kind: String, Sendable, Equatable {
        /// Carrying a slice of the commits left over, writers let in after it.
        case slice
        /// Carrying the last commits, syncing the new file and renaming it over the old.
        case swap
    }

    public var kind: Kind
    /// How long writers were held back, from taking the write gate to giving it back.
    public var duration: Duration = .zero
    /// Bytes of the old file whose commits it carried over.
    public var bytesCarried: UInt64 = 0
    /// Commits it carried over.
    public var commitsCarried: Int = 0
    /// Reading those commits from the old file and encoding them again for the new.
    public var reading: Duration = .zero
    /// Writing them to the new file (not yet synced).
    public var writing: Duration = .zero
    /// Replaying commits into the new file's trees, as a reopen would: a slice replays a
    /// part of those appended (the rest is replayed beside the writers), the swap all.
    public var replaying: Duration = .zero
    /// Bytes of the new file whose commits it replayed.
    public var bytesReplayed: UInt64 = 0
    /// Syncing the new file (a swap only; slices are synced beside the writers).
    public var syncing: Duration = .zero
    /// Renaming the new file over the old, syncing the directory and putting the new file's
    /// state in the handle (a swap only).
    public var renaming: Duration = .zero

    public init(kind: Kind) {
        self.kind = kind
    }

    /// Adds what a carry-over spent to this hold.
    mutating func add(_ carried: CarriedOver) {
        bytesCarried += carried.bytes
        commitsCarried += carried.commits
        reading += carried.reading
        writing += carried.writing
    }

    public var description: String {
        func ms(_ duration: Duration) -> String {
            let value = Double(duration.components.seconds) * 1e3 + Double(duration.components.attoseconds) * 1e-15
            return value >= 10 ? String(Int(value.rounded())) : String(format: "%.2g", value)
        }
        var parts = ["read \(ms(reading))", "write \(ms(writing))"]
        parts.append("replay \(bytesReplayed / 1000) KB \(ms(replaying))")
        if kind == .swap { parts += ["sync \(ms(syncing))", "rename \(ms(renaming))"] }
        return "\(kind) of \(commitsCarried) commits (\(bytesCarried / 1000) KB): \(ms(duration)) ms (\(parts.joined(separator: ", ")))"
    }
}

/// What one append of commits to a compaction's new file did and spent.
struct CarriedOver {
    /// Where it stopped in the old file.
    var end: UInt64
    var bytes: UInt64 = 0
    var commits = 0
    var reading: Duration = .zero
    var writing: Duration = .zero
}
