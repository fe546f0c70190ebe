import Testing
@testable import StrataEngine

/// A branch keeps, beside each child, where the child's search reads first
/// (`SearchLines`), so that a lookup asks for the child and its heads at once. The lines are
/// a prefetch hint; these tests hold them to what the children are, through the changes a
/// tree goes through.
@Suite("A branch's search lines for its children")
struct SearchLinesTests {
    /// Every branch slot of the tree under `root` whose lines differ from its child's own.
    private func staleSlots(under root: NodeRef?) -> [String] {
        guard case .branch(let branch) = root else { return [] }
        var stale: [String] = []
        for i in 0 ..< branch.childCount {
            let child = branch.child(at: i)
            if branch.searchLines(at: i) != child.searchLines { stale.append("slot \(i) of a branch of \(branch.childCount)") }
            stale += staleSlots(under: child)
        }
        return stale
    }

    private func options() -> Database.Options {
        var options = smallOptions(pageSize: 4096)
        options.writeBufferEntries = nil   // every put goes into the tree
        return options
    }

    @Test("puts in place into leaves a transaction owns, which move their arrays as they grow, leave the parent's lines current")
    func putsInPlaceKeepLinesCurrent() throws {
        let db = try Database(path: "/db", options: options(), fileSystem: SimulatedFileSystem())
        try db.write { tx in
            try tx.createTree("t")
            for i in stride(from: 0, to: 30_000, by: 10) { try tx.put([1], forKey: Key(i).bytes, in: "t") }
        }
        // Between the keys of the first transaction: nine puts into each leaf's gaps, more than
        // the room a copied leaf's arrays are given (`LeafNode.copy`), so they reallocate.
        try db.write { tx in
            for i in 0 ..< 30_000 where i % 10 != 0 { try tx.put([2], forKey: Key(i).bytes, in: "t") }
        }
        let tree = try #require(try db.snapshot().trees["t"])
        #expect(staleSlots(under: tree.root) == [])
        #expect(try db.snapshot().withValue(forKey: 12_345, in: "t") { Array($0) } == [2])
    }

    @Test("deletes that merge and refill leaves, and a checkpoint that keeps the leaves it wrote, leave every slot's lines current")
    func deletesAndCheckpointKeepLinesCurrent() throws {
        let db = try Database(path: "/db", options: options(), fileSystem: SimulatedFileSystem())
        try db.write { tx in
            try tx.createTree("t")
            for i in 0 ..< 20_000 { try tx.put([UInt8](repeating: 3, count: 12), forKey: Key(i).bytes, in: "t") }
        }
        try db.write { tx in
            for i in 0 ..< 20_000 where i % 7 != 0 { _ = try tx.delete(Key(i).bytes, in: "t") }
        }
        #expect(staleSlots(under: try #require(try db.snapshot().trees["t"]).root) == [])
        try db.checkpoint()
        #expect(staleSlots(under: try #require(try db.snapshot().trees["t"]).root) == [])
        #expect(try db.snapshot().withValue(forKey: 7_000, in: "t") { Array($0) } == [UInt8](repeating: 3, count: 12))
        #expect(try db.snapshot().withValue(forKey: 7_001, in: "t") { _ in true } == nil)
    }
}
