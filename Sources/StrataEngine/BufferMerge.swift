/// One tree's write buffer merged into a copy of the tree away from the writer
/// (docs/WRITE-BUFFER.md, step 3): made from a committed state on another thread, then
/// installed into a later state by whoever holds the writer, if that state still starts
/// from what the merge read.
///
/// A later state starts from it when its tree is the same tree (by identity, in the same
/// file) and its oldest runs are the runs the merge took: the writer has only added newer
/// runs since. Those stay; the taken ones give way to the merged tree. Anything else (a
/// merge on the writer's thread, a checkpoint, a compaction since) makes the merge stale,
/// and it is dropped: the state it would replace holds the same entries.
struct BufferMerge: @unchecked Sendable {
    /// The file the tree is in: an address names a page only within its file.
    let store: PageStore
    /// The tree's root as the merge read it.
    let from: NodeRef?
    /// The runs it merged, newest first: the oldest runs of the state it read.
    let taken: [BufferRun]
    /// The tail it merged (all the state it read had), newer than every run.
    let takenTail: BufferTail.View?
    /// The tree with those runs merged in, by an owner no transaction has.
    let root: NodeRef?
    /// What the merge learnt of the taken runs' unresolved puts: how many keys they added.
    let added: UInt64

    /// Merges `state`'s runs into a copy of its tree made by `mutator`, whose owner must be
    /// new: nodes the state shares are copied, never changed.
    /// - Throws: What reading the tree throws (`StrataError.corruption`, `.io`).
    static func merging(_ state: TreeState, mutator: TreeMutator) throws -> BufferMerge {
        precondition(state.pending == nil, "a committed state has no pending writes")
        let merged = try TreeChanges.mergingBuffers(of: ["": state], mutator: mutator)[""]!
        return BufferMerge(store: mutator.store, from: state.root, taken: state.runs?.runs ?? [], takenTail: state.tail, root: merged.root,
                           added: merged.entryCount &- state.entryCount)
    }

    /// `state` with this merge in place of the runs and the tail positions it took, when
    /// `state` still starts from what the merge read (in `store`); nil when it does not. A
    /// tail the merge took must still be the state's, from the same position: the writer
    /// has only appended to it since (a sealed tail is a run the merge did not take). What
    /// was appended stays, as do newer runs and a transaction's pending writes: none of
    /// them left its count to the merge for a key the merge took (a write finds such a key
    /// in the buffer).
    func installed(in state: TreeState, store: PageStore) -> TreeState? {
        guard store === self.store, Self.isSameTree(state.root, from),
              case .some(let newerTail) = remainder(of: state.tail) else { return nil }
        let runs = state.runs?.runs ?? []
        guard runs.count >= taken.count, zip(runs.suffix(taken.count), taken).allSatisfy({ $0 === $1 }) else { return nil }
        let newer = Array(runs.dropLast(taken.count))
        return TreeState(root: root, entryCount: state.entryCount &+ added,
                         runs: newer.isEmpty ? nil : SortedRuns(newer), tail: newerTail, pending: state.pending)
    }

    /// What of `tail` this merge leaves: all of it when the merge took no tail, what was
    /// appended since when it took this one (`.some(nil)`: nothing); nil when `tail` is not
    /// the one the merge took.
    private func remainder(of tail: BufferTail.View?) -> BufferTail.View?? {
        guard let takenTail else { return .some(tail) }
        guard let tail, tail.tail === takenTail.tail, tail.start == takenTail.start, tail.end >= takenTail.end else { return nil }
        return .some(tail.end == takenTail.end ? nil : BufferTail.View(tail: tail.tail, start: takenTail.end, end: tail.end))
    }

    private static func isSameTree(_ a: NodeRef?, _ b: NodeRef?) -> Bool {
        switch (a, b) {
        case (nil, nil): true
        case (.stored(let x)?, .stored(let y)?): x == y
        case (let x?, let y?): x.identity != nil && x.identity == y.identity
        default: false
        }
    }
}

extension [String: BufferMerge] {
    /// `trees` with each of these merges installed where it applies
    /// (`BufferMerge.installed(in:store:)`).
    func installed(in trees: [String: TreeState], store: PageStore) -> [String: TreeState] {
        var trees = trees
        for (name, merge) in self {
            if let state = trees[name], let installed = merge.installed(in: state, store: store) { trees[name] = installed }
        }
        return trees
    }
}
