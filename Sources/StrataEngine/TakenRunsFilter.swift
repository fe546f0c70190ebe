/// One Bloom filter over every key of the runs a merge into the tree took
/// (`BackgroundBufferMerges.start`), built on the merge's thread before it merges.
///
/// At 10M records such a merge holds a score of runs for seconds, and until it is installed
/// every write and every lookup of the tree tested each of their filters
/// (`SortedRuns.find`): with the writer leaving those runs out of its bound on the runs it
/// keeps, a load's buffer held 30–45 runs, and `SortedRuns.find` was 8–9% of the writer's
/// samples (perf, W1 insert.batch at 10M). With this filter a key none of them holds — every
/// write of a load, every read of a key in the tree — tests one filter for all of them; a
/// key it may hold is looked for in each run through the run's own filter, as before.
///
/// The filter holds its runs: `SortedRuns` uses it only where they lie side by side in its
/// own runs (`span(of:)`, by identity, which the references keep unambiguous), so a run it does
/// not cover is never skipped. Nothing refers back to it from a run.
final class TakenRunsFilter: @unchecked Sendable {
    /// The runs covered, newest first, as the merge took them.
    let runs: [BufferRun]
    /// Never changed once built: probes read its words where they lie, while this lives.
    private let filter: BloomFilter

    /// A filter over all the keys of `runs`, tombstones included: a lookup that passes it
    /// still asks each run.
    init(covering runs: [BufferRun]) {
        self.runs = runs
        var filter = BloomFilter(keys: runs.reduce(0) { $0 + $1.count })
        for run in runs {
            for i in 0 ..< run.count { filter.insert(hash: BloomFilter.hash(run.key(at: i))) }
        }
        self.filter = filter
    }

    /// A filter for `runs` when there are enough of them for one test to save several;
    /// nil otherwise.
    static func covering(_ runs: [BufferRun]) -> TakenRunsFilter? {
        runs.count(where: { $0.filterProbe != nil }) >= minimumRuns ? TakenRunsFilter(covering: runs) : nil
    }

    /// Fewer filtered runs than this are tested one by one: the filter would cost a hash of
    /// every key they hold to save a test or two.
    static let minimumRuns = 4

    var probe: BloomFilter.Probe { filter.probe }
}
