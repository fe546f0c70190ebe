/// Neighbouring runs of one tree's write buffer merged into one away from the writer
/// (docs/WRITE-BUFFER.md, step 3): the size-tiered merging of runs
/// (`SortedRuns.adding`), made on another thread, then put in place of the runs by
/// whoever holds the writer, if they are still there.
///
/// The runs are found by identity. A merge into the tree that took any of them since
/// (`BufferRun.isTaken`), or a checkpoint that emptied the buffer, makes this merge stale,
/// and it is dropped: the state it would change holds the same entries.
struct RunsMerge: @unchecked Sendable {
    /// The tree whose runs these are.
    let tree: String
    /// The runs merged, newest first, neighbours in the state they were read from.
    let sources: [BufferRun]
    /// Their entries in one run, the newest of each key winning (`BufferRun.merging`).
    let merged: BufferRun

    /// Merges `sources`, which the caller marked claimed (`BufferRun.markClaimed`).
    init(tree: String, sources: [BufferRun]) {
        self.tree = tree
        self.sources = sources
        self.merged = BufferRun.merging(sources)
    }

    /// `state` with the merged run in place of the sources, when it still holds them as
    /// neighbours and no merge into the tree took them; nil when it does not. The count and
    /// pending writes stay: the merged run holds the same newest entries, and carries the
    /// same unresolved counts.
    func installed(in state: TreeState) -> TreeState? {
        guard let runs = state.runs?.runs, !sources.contains(where: \.isTaken), let span = runs.span(of: sources) else { return nil }
        var installed = state
        installed.runs = SortedRuns(Array(runs[..<span.lowerBound]) + [merged] + runs[span.upperBound...], takenFilter: state.runs?.takenFilter)
        return installed
    }
}
