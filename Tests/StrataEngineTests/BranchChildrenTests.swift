import Dispatch
import Foundation
import Synchronization
import Testing
@testable import StrataEngine

/// A branch's copy takes its children over without retaining them (`BranchChildren`): what
/// an older version shows must live as long as that version, and everything must be freed
/// once no version holds it.
@Suite("Branch children moved to copies")
struct BranchChildrenTests {
    /// A branch of `count` in-memory leaves, and weak references to them.
    func branch(of count: Int, owner: UInt64 = 1) -> (BranchNode, [WeakLeaf]) {
        let leaves = (0 ..< count).map { _ in LeafNode(owner: owner) }
        let keys = (1 ..< count).map { Key($0).bytes }
        return (BranchNode(owner: owner, keys: keys, children: leaves.map { .leaf($0) }), leaves.map(WeakLeaf.init))
    }

    func leaf(_ ref: NodeRef) -> LeafNode? {
        if case .leaf(let leaf) = ref { return leaf }
        return nil
    }

    @Test("a child the copy replaces stays alive while the older version shows it, and goes with the last version")
    func replacedChildOutlivesOlderVersion() {
        var (source, leaves): (BranchNode?, [WeakLeaf]) = branch(of: 4)
        var copy: BranchNode? = source!.copy(owner: 2)
        copy!.setChild(.leaf(LeafNode(owner: 2)), at: 1)
        #expect(leaves[1].node != nil)
        #expect(leaf(source!.child(at: 1)) === leaves[1].node)
        source = nil
        // Nothing older shows the replaced child now; the copy keeps it until it goes.
        #expect(leaves[0].node != nil)
        copy = nil
        #expect(leaves.allSatisfy { $0.node == nil })
    }

    @Test("an older version keeps its copy, and so its children, alive after every other holder let go")
    func olderVersionKeepsCopyAlive() {
        var (source, leaves): (BranchNode?, [WeakLeaf]) = branch(of: 4)
        weak var weakCopy: BranchNode?
        do {
            let copy = source!.copy(owner: 2)
            copy.setChild(.leaf(LeafNode(owner: 2)), at: 2)
            copy.removeChild(at: 3)
            weakCopy = copy
        }
        #expect(weakCopy != nil)
        #expect((0 ..< 4).allSatisfy { leaf(source!.child(at: $0)) === leaves[$0].node })
        source = nil
        #expect(weakCopy == nil)
        #expect(leaves.allSatisfy { $0.node == nil })
    }

    @Test("a second copy of a version already copied (a rolled-back transaction's source) holds its own references")
    func secondCopyRetains() {
        var (source, leaves): (BranchNode?, [WeakLeaf]) = branch(of: 4)
        _ = source!.copy(owner: 2)   // rolled back: only the source holds it
        var second: BranchNode? = source!.copy(owner: 3)
        second!.setChild(.leaf(LeafNode(owner: 3)), at: 0)
        source = nil
        #expect(leaves[0].node == nil)
        #expect((1 ..< 4).allSatisfy { leaf(second!.child(at: $0)) === leaves[$0].node })
        second = nil
        #expect(leaves.allSatisfy { $0.node == nil })
    }

    @Test("the half split off a copy keeps the children the older version shows")
    func splitHalfOutlivesOlderVersion() {
        var (source, leaves): (BranchNode?, [WeakLeaf]) = branch(of: 8)
        var copy: BranchNode? = source!.copy(owner: 2)
        weak var weakRight: BranchNode?
        do {
            let (_, right) = copy!.splitOff(owner: 2)
            right.setChild(.leaf(LeafNode(owner: 2)), at: 0)
            weakRight = right
        }
        copy = nil
        #expect(weakRight != nil)
        #expect((0 ..< 8).allSatisfy { leaf(source!.child(at: $0)) === leaves[$0].node })
        source = nil
        #expect(weakRight == nil)
        #expect(leaves.allSatisfy { $0.node == nil })
    }

    @Test("a line of versions longer than the lineage limit frees every version and child once released")
    func longLineIsFreed() {
        var (first, leaves): (BranchNode?, [WeakLeaf]) = branch(of: 4)
        var latest = first
        var added: [WeakLeaf] = []
        for version in 0 ..< BranchNode.maxLineage * 3 {
            latest = latest!.copy(owner: UInt64(version + 2))
            let fresh = LeafNode(owner: UInt64(version + 2))
            added.append(WeakLeaf(fresh))
            latest!.setChild(.leaf(fresh), at: version % 4)
        }
        first = nil
        #expect(leaves.allSatisfy { $0.node == nil })
        #expect(added.suffix(4).allSatisfy { $0.node != nil })
        latest = nil
        #expect(added.allSatisfy { $0.node == nil })
    }

    @Test("copies of one branch made on two threads at once take its references over at most once")
    func simultaneousCopiesTakeOverOnce() {
        // The writer, a merge beside it, a checkpoint pass and the verifier each copy the
        // committed branches they change. Two copies both taking the references over would
        // both release them: a crash when the versions go.
        let rounds = 4000
        let sources = (0 ..< rounds).map { _ in branch(of: 4).0 }
        let copies = Mutex<[[BranchNode]]>(Array(repeating: [], count: rounds))
        let arrived = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: 2) { _ in
            for round in 0 ..< rounds {
                // Both threads reach the copy of each round together.
                arrived.add(1, ordering: .acquiringAndReleasing)
                while arrived.load(ordering: .acquiring) < 2 * (round + 1) {}
                let copy = sources[round].copy(owner: 2)
                copies.withLock { $0[round].append(copy) }
            }
        }
        let doubleTakes = copies.withLock { all in all.indices.filter { all[$0].allSatisfy(\.inheritsReferences) } }
        // Were a round's references owned twice, releasing it would crash the test: leak it.
        for round in doubleTakes { _ = Unmanaged.passRetained(sources[round]) }
        #expect(doubleTakes.isEmpty)
        #expect(copies.withLock { $0.allSatisfy { $0.count == 2 && $0.contains(where: \.inheritsReferences) } })
    }

    @Test("a snapshot held across commits that split, merge and roll back reads what it saw, and the tree what was written")
    func snapshotHeldAcrossCommits() throws {
        let fs = SimulatedFileSystem()
        let db = try Database(path: "/db", options: smallOptions(), fileSystem: fs)
        try db.write { tx in
            try tx.createTree("t")
            for i in 0 ..< 3000 { try tx.put(Key(i).bytes, forKey: Key(i).bytes, in: "t") }
        }
        let held = try db.snapshot()
        var model = Set(0 ..< 3000)
        var rng = SeededGenerator(seed: 11)
        for round in 0 ..< 300 {
            let key = Int.random(in: 0 ..< 6000, using: &rng)
            if round % 50 == 49 {
                struct RolledBack: Error {}
                _ = try? db.write { tx in
                    try tx.put([9], forKey: Key(key).bytes, in: "t")
                    throw RolledBack()
                }
            } else if model.contains(key) {
                try db.write { tx in _ = try tx.delete(Key(key).bytes, in: "t") }
                model.remove(key)
            } else {
                try db.write { tx in
                    for k in key ..< key + 20 { try tx.put(Key(k).bytes, forKey: Key(k).bytes, in: "t") }
                }
                model.formUnion(key ..< key + 20)
            }
        }
        #expect(try allEntries(held, "t").map(\.0) == (0 ..< 3000).map { Key($0).bytes })
        #expect(try allEntries(db.snapshot(), "t").map(\.0) == model.sorted().map { Key($0).bytes })
        try db.close()
        let reopened = try Database(path: "/db", options: smallOptions(), fileSystem: fs)
        #expect(try allEntries(reopened.snapshot(), "t").map(\.0) == model.sorted().map { Key($0).bytes })
    }

    @Test("readers on other threads see whole commits while the writer copies, splits and merges the branches they read")
    func readersBesideCopyingWriter() throws {
        // Commit n adds 7 keys after the 40 first ones; every fifth commit also deletes the
        // keys of the four before it (leaves merge). The commit's number is under "n", so a
        // reader can tell from it alone what its snapshot must hold.
        @Sendable func keys(of commit: Int) -> Range<Int> { 40 + 7 * (commit - 1) ..< 40 + 7 * commit }
        @Sendable func expected(after n: Int) -> [Int] {
            Array(0 ..< 40) + (0 ..< n).map { $0 + 1 }.filter { m in m % 5 == 0 || (m + 4) / 5 * 5 > n }.flatMap { keys(of: $0) }
        }
        var options = smallOptions()
        options.checkpointLogBytes = 256 << 10   // checkpoints under way too
        let db = try Database(path: "/db", options: options, fileSystem: SimulatedFileSystem())
        try db.write { tx in
            try tx.createTree("t")
            try tx.createTree("meta")
            for key in 0 ..< 40 { try tx.put([], forKey: Key(key).bytes, in: "t") }
            try tx.put(Key(0).bytes, forKey: Array("n".utf8), in: "meta")
        }
        let stop = Atomic<Bool>(false)
        let checked = Atomic<Int>(0)
        let failures = Mutex<[String]>([])
        // Threads of their own: the global queue runs as many items as there are cores, and
        // tests running beside this one may hold them.
        let started = DispatchSemaphore(value: 0), finished = DispatchSemaphore(value: 0)
        for _ in 0 ..< 2 {
            Thread {
                defer { finished.signal() }
                started.signal()
                var held: [Snapshot] = []   // some snapshots outlive many commits
                repeat {
                    do {
                        let snapshot = try db.snapshot()
                        guard let stamp = try snapshot.get(Array("n".utf8), in: "meta"),
                              case .int(let n)? = try Key(bytes: stamp).elements().first else {
                            failures.withLock { $0.append("no commit number") }
                            return
                        }
                        var keys: [Int] = []
                        try snapshot.scan("t") { key, _ in
                            if case .int(let k)? = try? Key(bytes: Array(key)).elements().first { keys.append(Int(k)) }
                            return true
                        }
                        if keys != expected(after: Int(n)) { failures.withLock { $0.append("snapshot of commit \(n) held \(keys.count) keys") } }
                        checked.add(1, ordering: .relaxed)
                        held.append(snapshot)
                        if held.count > 8 { held.removeFirst(Int.random(in: 1 ... 8)) }
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                    }
                } while !stop.load(ordering: .relaxed)
            }.start()
        }
        started.wait()
        started.wait()
        for n in 1 ... 600 {
            try db.write { tx in
                for key in keys(of: n) { try tx.put([], forKey: Key(key).bytes, in: "t") }
                if n % 5 == 0 {
                    for key in keys(of: n - 4).lowerBound ..< keys(of: n - 1).upperBound { _ = try tx.delete(Key(key).bytes, in: "t") }
                }
                try tx.put(Key(n).bytes, forKey: Array("n".utf8), in: "meta")
            }
        }
        stop.store(true, ordering: .relaxed)
        finished.wait()
        finished.wait()
        #expect(failures.withLock { $0 }.isEmpty)
        #expect(checked.load(ordering: .relaxed) > 0)
        #expect(try allEntries(db.snapshot(), "t").map(\.0) == expected(after: 600).map { Key($0).bytes })
    }
}

/// A weak reference to a leaf, to see when it is freed.
final class WeakLeaf {
    weak var node: LeafNode?
    init(_ node: LeafNode) { self.node = node }
}
