/// Applies tree mutations for one owner id: shared by write transactions and log replay.
///
/// With `buffer` set, puts and deletes that would copy a shared leaf go to the tree's write
/// buffer instead (`TreeChanges+WriteBuffer.swift`, docs/WRITE-BUFFER.md); replay and
/// everything outside write transactions write straight into the trees.
struct TreeChanges {
    /// Set only through the operations below (and the write buffer's, in its file).
    var trees: [String: TreeState]
    var mutator: TreeMutator
    /// When buffered writes are merged into their tree; nil: no buffering.
    var buffer: WriteBufferPolicy?
    /// Why a merge of buffered writes into a tree failed partway, leaving the trees
    /// neither before nor after it: the transaction can only roll back.
    var failedMerge: String?
    /// The trees the applied operations named, when the caller asked (non-nil): what a
    /// refreshing reader tells its observers.
    var touched: Set<String>? = nil
    /// The tree the last put or delete named, and where its state is in `trees`: a
    /// transaction's puts mostly name one tree, and finding it by name hashed the name at
    /// every put (~170 instructions, 4.6% of a W1 load's; callgrind). An index stays valid
    /// while no key is added to or removed from `trees`; `createTree`, `dropTree` and
    /// `replaceTrees` forget it.
    private var lastTree: (name: String, index: Dictionary<String, TreeState>.Index)?

    init(trees: [String: TreeState], mutator: TreeMutator) {
        self.trees = trees
        self.mutator = mutator
    }

    /// Starts again from `trees` (a replay that gives up a batch).
    mutating func replaceTrees(_ trees: [String: TreeState]) {
        self.trees = trees
        lastTree = nil
    }

    /// Puts `key`; with `replacing` false a present key is left unchanged. Returns whether
    /// the key is new; a replacing put into a write buffer that did not look its key up
    /// returns false (the count learns it later: `PendingWrites.unresolved`).
    @discardableResult
    mutating func put(tree: String, key: UnsafeRawBufferPointer, value: ValueSlot, replacing: Bool = true) throws -> Bool {
        let index = try position(of: tree)
        if let buffer { return try bufferedPut(at: index, key: key, value: value, replacing: replacing, policy: buffer) }
        return try putInTreeCounting(at: index, key: key, value: value, replacing: replacing)
    }

    /// `putInTree`, counting a new key (in wrapping arithmetic: `TreeState.entryCount`).
    mutating func putInTreeCounting(at index: Dictionary<String, TreeState>.Index, key: UnsafeRawBufferPointer, value: ValueSlot,
                                    replacing: Bool) throws -> Bool {
        let inserted = try putInTree(at: index, key: key, value: value, replacing: replacing)
        if inserted { trees.values[index].entryCount &+= 1 }
        return inserted
    }

    /// `put` straight into the tree at `index` of `trees`, leaving its count to the caller
    /// (a merge of a write buffer applies writes the count holds already).
    mutating func putInTree(at index: Dictionary<String, TreeState>.Index, key: UnsafeRawBufferPointer, value: ValueSlot,
                            replacing: Bool) throws -> Bool {
        assert(!trees.values[index].isBuffered || buffer != nil,
               "a write straight into a tree with buffered writes would be hidden by them")
        // Most puts go in place below the root, which then stays as it is: not storing it
        // back spares a retain and a release of the root per put (and their outlined copies
        // of the enum, ~190 instructions a put in a W1 load; callgrind). The walk reads the
        // root unretained: the tree state holds it.
        if case .branch(let top)? = trees.values[index].root?.unretained,
           let inserted = try mutator.putInPlace(top: top, key: key, value: value, replacing: replacing) {
            return inserted
        }
        guard let root = trees.values[index].root else {
            trees.values[index].root = mutator.firstRoot(key: key, value: value)
            return true
        }
        let result = try mutator.putSplitting(root: root, key: key, value: value, replacing: replacing)
        guard result.inserted || replacing else { return false }
        trees.values[index].root = result.root
        return result.inserted
    }

    mutating func delete(tree: String, key: UnsafeRawBufferPointer) throws -> Bool {
        let index = try position(of: tree)
        if let buffer { return try bufferedDelete(at: index, key: key, policy: buffer) }
        return try deleteInTreeCounting(at: index, key: key)
    }

    /// `deleteInTree`, counting a removed key (in wrapping arithmetic: `TreeState.entryCount`).
    mutating func deleteInTreeCounting(at index: Dictionary<String, TreeState>.Index, key: UnsafeRawBufferPointer) throws -> Bool {
        let removed = try deleteInTree(at: index, key: key)
        if removed { trees.values[index].entryCount &-= 1 }
        return removed
    }

    /// `delete` straight from the tree at `index` of `trees`, leaving its count to the caller.
    mutating func deleteInTree(at index: Dictionary<String, TreeState>.Index, key: UnsafeRawBufferPointer) throws -> Bool {
        let result = try mutator.delete(root: trees.values[index].root, key: key)
        guard result.removed else { return false }
        trees.values[index].root = result.root
        return true
    }

    /// Where `tree`'s state is in `trees`: a put or delete finds it by name at most once
    /// and changes the state in place (a lookup, then an assignment by name, hashed it
    /// twice: ~450 instructions of each record put in a W1 load; callgrind). The same tree
    /// as the last is found by comparing names, with no hashing.
    @inline(__always)
    mutating func position(of tree: String) throws -> Dictionary<String, TreeState>.Index {
        if let last = lastTree, last.name == tree { return last.index }
        guard let index = trees.index(forKey: tree) else { throw StrataError.treeNotFound(tree) }
        lastTree = (tree, index)
        return index
    }

    /// - Throws: `StrataError.treeNotFound` when no tree is called `name`.
    func requireTree(_ name: String) throws {
        guard trees[name] != nil else { throw StrataError.treeNotFound(name) }
    }

    mutating func createTree(_ name: String) throws {
        guard trees[name] == nil else { throw StrataError.treeAlreadyExists(name) }
        lastTree = nil
        trees[name] = TreeState(root: nil, entryCount: 0)
    }

    mutating func dropTree(_ name: String) throws {
        lastTree = nil
        guard trees.removeValue(forKey: name) != nil else { throw StrataError.treeNotFound(name) }
    }

    mutating func apply(_ operation: LogOperation) throws {
        if touched != nil { touched!.insert(operation.tree) }
        switch operation {
        case .put(let tree, let key, let value): try put(tree: tree, key: key, value: .inline(value))
        case .putStored(let tree, let key, let address, let length): try put(tree: tree, key: key, value: .overflow(address, length: length))
        case .delete(let tree, let key): _ = try delete(tree: tree, key: key)
        case .createTree(let name): try createTree(name)
        case .dropTree(let name): try dropTree(name)
        }
    }
}

