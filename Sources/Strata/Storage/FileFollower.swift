import StrataEngine
import Synchronization

extension StrataStorage {
    /// Makes the commits other handles — in this process or another — made to the file
    /// since this read-only storage opened or last refreshed visible to its next reads,
    /// and tells its observers which collections they changed. A writable storage holds
    /// the file's lock, so there is nothing to catch up with.
    ///
    /// A storage that is observed (`observe`, `observeCommits`) refreshes by itself when
    /// the file changes (see `Database.watchCommits` for the latency).
    ///
    /// ```swift
    /// let dashboard = try StrataStorage(path: "app.strata", options: .init(readOnly: true))
    /// try dashboard.refresh()          // see what the app process committed since
    /// let open = try dashboard.count(Chore.filter(\.done == false))
    /// ```
    ///
    /// - Throws: `StrataError.corruption` when the new commits are damaged, `.io` when the
    ///   file is gone or unreadable.
    public func refresh() throws {
        announce(try database.refresh())
    }

    /// Whether this storage is watching its file for other handles' commits: while a
    /// read-only storage has observers.
    public var isFollowingFile: Bool { follower.isRunning }

    /// Tells observers about the commits a refresh made visible.
    func announce(_ refresh: Database.Refresh) {
        guard refresh.hasChanges else { return }
        let collections: Set<String>
        if let trees = refresh.changedTrees {
            collections = Set(trees.compactMap(CatalogEntry.collection(ofRecordsTree:)))
        } else {
            // The file was replaced after unseen commits: any collection may have changed.
            collections = Set((try? database.read { try CatalogEntry.collectionNames(in: $0) }) ?? [])
        }
        observers.committed(collections)
    }
}

/// The commit watch of a read-only `StrataStorage`, running while it has observers: the
/// first observer starts it, the last one leaving stops it.
final class FileFollower: Sendable {
    private struct State {
        var observers = 0
        var watch: CommitWatch?
        var stopped = false
    }

    private let state = Mutex(State())

    var isRunning: Bool { state.withLock { $0.watch != nil } }

    func retain(_ storage: StrataStorage) {
        state.withLock { state in
            state.observers += 1
            guard state.watch == nil, !state.stopped else { return }
            // The watch holds the storage weakly: observers do not keep a storage open.
            state.watch = storage.database.watchCommits { [weak storage] result in
                guard let storage else { return }
                switch result {
                case .success(let refresh): storage.announce(refresh)
                case .failure(let error): storage.observers.failed("\(error)")
                }
            }
        }
    }

    func release() {
        let watch = state.withLock { state -> CommitWatch? in
            state.observers -= 1
            guard state.observers == 0 else { return nil }
            defer { state.watch = nil }
            return state.watch
        }
        watch?.stop()
    }

    /// Stops for good (the storage closes).
    func stop() {
        state.withLock { state in
            state.stopped = true
            defer { state.watch = nil }
            return state.watch
        }?.stop()
    }
}
