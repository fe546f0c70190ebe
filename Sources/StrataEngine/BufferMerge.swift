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
        return BufferMerge(store: mutator.store, from: state.root, taken: state.runs?.runs ?? [], root: merged.root,
                           added: merged.entryCount &- state.entryCount)
    }

    /// `state` with this merge in place of the runs it took, when `state` still starts from
    /// what the merge read (in `store`); nil when it does not. A transaction's pending writes
    /// stay: they are newer than every run, and none of them left its count to the merge
    /// for a key the taken runs hold (a write finds such a key in the buffer).
    func installed(in state: TreeState, store: PageStore) -> TreeState? {
        guard store === self.store, Self.isSameTree(state.root, from),
              let runs = state.runs?.runs, runs.count >= taken.count,
              zip(runs.suffix(taken.count), taken).allSatisfy({ $0 === $1 }) else { return nil }
        let newer = Array(runs.dropLast(taken.count))
        return TreeState(root: root, entryCount: state.entryCount &+ added,
                         runs: newer.isEmpty ? nil : SortedRuns(newer), pending: state.pending)
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
