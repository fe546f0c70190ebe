/// The write buffer's side of a cursor over a tree with buffered writes: a position in each
/// sorted run, and which source the cursor is on.
///
/// The sources are the runs, newest first, then the tree (source number `runs.count`).
/// Moving forward, every source rests on its first key at or after the cursor's; the cursor
/// is on the smallest key among them, from the newest source holding it. A tombstone there
/// hides the key: the cursor steps every source past it and looks again. Backward is the
/// mirror image, and turning around places every source on the other side of the current
/// key first. (LevelDB's merging iterator works the same way.)
///
/// A merge belongs to one cursor, used by one thread at a time, so its state opts out of
/// dynamic exclusivity checks: they were ~8% of the instructions of a scan over a buffered
/// tree (callgrind, W1 at 100k).
final class RunMerge {
    let runs: [BufferRun]
    /// Each run's entry index; out of `0 ..< count` when the run is past its end.
    @exclusivity(unchecked) var positions: [Int]
    @exclusivity(unchecked) var forward = true
    /// The source the cursor is on; nil when it is on no entry.
    @exclusivity(unchecked) var winner: Int?
    /// The current key, copied while the sources move away from it.
    @exclusivity(unchecked) var scratch: [UInt8] = []
    /// The run whose key comes first in the direction of travel (the newest on a tie), nil
    /// when every run is past its end; valid while `bestRunIsKnown`. Runs hold a small
    /// share of a tree's entries, so most steps move the tree alone: comparing its key with
    /// this one run's, instead of every source's, made a scan over a tree with eight runs
    /// cost ~2 comparisons a step instead of ~18.
    @exclusivity(unchecked) var bestRun: Int?
    @exclusivity(unchecked) var bestRunIsKnown = false

    init(runs: [BufferRun]) {
        self.runs = runs
        self.positions = Array(repeating: -1, count: runs.count)
    }

    var isValid: Bool { winner != nil }

    /// The entry the cursor is on.
    func location(tree: TreeCursor) -> TreeReader.Location? {
        guard let winner else { return nil }
        return winner < runs.count ? (runs[winner].entries, positions[winner]) : tree.location
    }
}

extension Cursor {
    private var runMerge: RunMerge { merge.unsafelyUnwrapped }

    /// The key source `s` is on, lent (valid until that source moves); nil past its end.
    private func key(ofSource s: Int) -> UnsafeRawBufferPointer? {
        let merge = runMerge
        guard s < merge.runs.count else { return tree.isValid ? tree.withKey { $0 } : nil }
        let position = merge.positions[s]
        return position >= 0 && position < merge.runs[s].count ? merge.runs[s].key(at: position) : nil
    }

    /// Puts the cursor on the next entry in the direction from where the sources rest,
    /// stepping over tombstones; false when no source has one.
    private func settle(forward: Bool) throws -> Bool {
        let merge = runMerge
        merge.forward = forward
        while true {
            var best = bestRun(forward: forward).map { (source: $0, key: key(ofSource: $0)!) }
            // On equal keys a run, newer than the tree, stays.
            if let treeKey = key(ofSource: merge.runs.count) {
                let order = best.map { compareBytes(treeKey, $0.key) } ?? -1
                if best == nil || (forward ? order < 0 : order > 0) { best = (merge.runs.count, treeKey) }
            }
            guard let (source, key) = best else {
                merge.winner = nil
                return false
            }
            guard source < merge.runs.count, merge.runs[source].isDeleted(merge.positions[source]) else {
                merge.winner = source
                return true
            }
            holdCurrentKey(key)
            try merge.scratch.withUnsafeBytes { try stepSources(at: $0, forward: forward) }
        }
    }

    /// `RunMerge.bestRun`, found again when the runs moved.
    private func bestRun(forward: Bool) -> Int? {
        let merge = runMerge
        if merge.bestRunIsKnown { return merge.bestRun }
        var best: (run: Int, key: UnsafeRawBufferPointer)?
        for s in merge.runs.indices {
            guard let key = key(ofSource: s) else { continue }
            // On equal keys the newer run (found first) stays.
            if let current = best {
                let order = compareBytes(key, current.key)
                guard forward ? order < 0 : order > 0 else { continue }
            }
            best = (s, key)
        }
        merge.bestRun = best?.run
        merge.bestRunIsKnown = true
        return best?.run
    }

    private func holdCurrentKey(_ key: UnsafeRawBufferPointer) {
        runMerge.scratch.removeAll(keepingCapacity: true)
        runMerge.scratch.append(contentsOf: key)
    }

    /// Moves every source resting on `key` one entry in the direction.
    private func stepSources(at key: UnsafeRawBufferPointer, forward: Bool) throws {
        let merge = runMerge
        // A run rests on `key` only if the first of them does: otherwise the runs stay.
        if let best = bestRun(forward: forward), compareBytes(self.key(ofSource: best)!, key) == 0 {
            for s in merge.runs.indices {
                guard let current = self.key(ofSource: s), compareBytes(current, key) == 0 else { continue }
                merge.positions[s] += forward ? 1 : -1
            }
            merge.bestRunIsKnown = false
        }
        if let current = self.key(ofSource: merge.runs.count), compareBytes(current, key) == 0 {
            _ = forward ? try tree.next() : try tree.previous()
        }
    }

    func mergedFirst() throws -> Bool {
        for s in runMerge.runs.indices { runMerge.positions[s] = 0 }
        runMerge.bestRunIsKnown = false
        try tree.first()
        return try settle(forward: true)
    }

    func mergedLast() throws -> Bool {
        for (s, run) in runMerge.runs.enumerated() { runMerge.positions[s] = run.count - 1 }
        runMerge.bestRunIsKnown = false
        try tree.last()
        return try settle(forward: false)
    }

    func mergedSeek(to key: UnsafeRawBufferPointer) throws -> Bool {
        for (s, run) in runMerge.runs.enumerated() { runMerge.positions[s] = run.search(key).index }
        runMerge.bestRunIsKnown = false
        try tree.seek(to: key)
        return try settle(forward: true)
    }

    func mergedNext() throws -> Bool {
        let merge = runMerge
        guard let winner = merge.winner else { return false }
        // On the tree's key going on: no run rests there (a run on the same key would have
        // won), so only the tree moves. Most steps of a scan are these (runs hold a small
        // share of the entries), and copying the key and comparing it with every source's
        // at each of them cost a W2 scan over a buffered tree a quarter of its time (perf).
        if merge.forward, winner == merge.runs.count {
            _ = try tree.next()
            return try settle(forward: true)
        }
        guard let current = key(ofSource: winner) else { return false }
        holdCurrentKey(current)
        try merge.scratch.withUnsafeBytes { key in
            if merge.forward {
                try stepSources(at: key, forward: true)
            } else {
                // Turning around: every source to its first key after the current one.
                for (s, run) in merge.runs.enumerated() {
                    let (index, found) = run.search(key)
                    merge.positions[s] = found ? index + 1 : index
                }
                merge.bestRunIsKnown = false
                try tree.seek(after: key)
            }
        }
        return try settle(forward: true)
    }

    func mergedPrevious() throws -> Bool {
        let merge = runMerge
        guard let winner = merge.winner else { return false }
        // The mirror image of `mergedNext`'s step on the tree alone.
        if !merge.forward, winner == merge.runs.count {
            _ = try tree.previous()
            return try settle(forward: false)
        }
        guard let current = key(ofSource: winner) else { return false }
        holdCurrentKey(current)
        try merge.scratch.withUnsafeBytes { key in
            if !merge.forward {
                try stepSources(at: key, forward: false)
            } else {
                // Turning around: every source to its last key before the current one.
                for (s, run) in merge.runs.enumerated() { merge.positions[s] = run.search(key).index - 1 }
                merge.bestRunIsKnown = false
                try tree.seek(before: key)
            }
        }
        return try settle(forward: false)
    }
}
