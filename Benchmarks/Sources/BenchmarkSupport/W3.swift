// W3 of ../../../shared/WORKLOAD.md: the DAO path, on every backend that implements Storage.
import Foundation
import Strata
import StrataDAO
import StrataExamples

public enum W3 {
    public static let messagesPerDialog = 50

    /// `count` dialogs (ids 0 ..< count, every tenth pinned) of 50 messages each.
    public static func dialogs(_ count: Int) -> [DialogPlainObject] {
        (0 ..< count).map { DialogPlainObject.sample($0, pinned: $0 % 10 == 0, messages: messagesPerDialog) }
    }

    /// The backends W3 runs on: a Strata file (durable commits) or memory.
    public static let backends = ["strata", "memory"]

    /// A fresh storage of `kind` in `directory`.
    public static func storage(_ kind: String, directory: String) throws -> AnyStorage {
        if kind == "memory" { return AnyStorage(try MemoryStorage()) }
        let path = directory + "/w3-\(UUID().uuidString).strata"
        return AnyStorage(try StrataStorage(path: path, options: .init(durability: .full)))
    }
}
