// W3 (../../shared/WORKLOAD.md): the DAO path. 10,000 dialogs of 50 messages each, persisted
// and read back through DAO + Translator, on StrataStorage and MemoryStorage.
import Benchmark
import Foundation
import Strata
import StrataDAO

struct W3Message: Plain {
    let id: Int
    let date: Date
    let text: String
    let senderId: Int
    let receiverId: Int
    let type: Int
    let isIncoming: Bool
    let isRead: Bool
    var uniqueId: UniqueID { UniqueID(id) }
}

struct W3Dialog: Plain {
    let id: Int
    let isPinned: Bool
    let messages: [W3Message]
    var uniqueId: UniqueID { UniqueID(id) }
}

struct W3MessageModel: Model {
    var id: Int64
    var dialogId: Int64
    var date: Date
    var text: String
    var senderId: Int64
    var receiverId: Int64
    var type: Int
    var isIncoming: Bool
    var isRead: Bool
    static let schema = Schema<W3MessageModel>(primaryKey: \.id)
}

struct W3DialogModel: Model {
    var id: Int64
    var isPinned: Bool
    var messageIds: [Int64]
    static let schema = Schema<W3DialogModel>(primaryKey: \.id, indexes: [.index(\.isPinned)])
}

struct W3MessageTranslator: Translator {
    var dialogId: Int64 = 0
    func translate(model m: W3MessageModel, context: any StorageReader) throws -> W3Message {
        W3Message(id: Int(m.id), date: m.date, text: m.text, senderId: Int(m.senderId), receiverId: Int(m.receiverId), type: m.type, isIncoming: m.isIncoming, isRead: m.isRead)
    }
    func translate(plain p: W3Message, context: any StorageWriter) throws -> W3MessageModel {
        W3MessageModel(id: Int64(p.id), dialogId: dialogId, date: p.date, text: p.text, senderId: Int64(p.senderId), receiverId: Int64(p.receiverId),
                       type: p.type, isIncoming: p.isIncoming, isRead: p.isRead)
    }
}

struct W3DialogTranslator: Translator {
    func translate(model m: W3DialogModel, context: any StorageReader) throws -> W3Dialog {
        W3Dialog(id: Int(m.id), isPinned: m.isPinned,
                 messages: try W3MessageTranslator().translate(models: context.read(W3MessageModel.self, primaryKeys: m.messageIds), context: context))
    }
    func translate(plain p: W3Dialog, context: any StorageWriter) throws -> W3DialogModel {
        let models = try W3MessageTranslator(dialogId: Int64(p.id)).translate(plains: p.messages, context: context)
        try context.persist(models)
        return W3DialogModel(id: Int64(p.id), isPinned: p.isPinned, messageIds: models.map(\.id))
    }
}

enum W3 {
    static let dialogs = 10_000
    static let messagesPerDialog = 50

    static let plains: [W3Dialog] = (0 ..< dialogs).map { d in
        W3Dialog(id: d, isPinned: d % 10 == 0, messages: (0 ..< messagesPerDialog).map { m in
            W3Message(id: d * messagesPerDialog + m, date: Date(timeIntervalSince1970: 1_700_000_000 + Double(m)), text: "message \(m) of dialog \(d)",
                      senderId: m % 2, receiverId: 1 - m % 2, type: 0, isIncoming: m % 2 == 0, isRead: m % 3 == 0)
        })
    }

    static func storage(_ kind: String) throws -> AnyStorage {
        if kind == "memory" { return AnyStorage(MemoryStorage()) }
        let path = NSTemporaryDirectory() + "strata-w3-\(UUID().uuidString).strata"
        return AnyStorage(try StrataStorage(path: path, options: .init(durability: .full)))
    }

    /// A storage filled once per backend, for the read benchmarks.
    static let filled: [String: AnyStorage] = {
        var result: [String: AnyStorage] = [:]
        for kind in ["strata", "memory"] {
            let storage = try! storage(kind)
            try! DAO(storage: storage, translator: W3DialogTranslator()).persist(plains)
            result[kind] = storage
        }
        return result
    }()
}

let w3Benchmarks: @Sendable () -> Void = {
    let configuration = Benchmark.Configuration(metrics: [.wallClock, .mallocCountTotal], scalingFactor: .one, maxDuration: .seconds(10), maxIterations: 3)
    for kind in ["strata", "memory"] {
        Benchmark("W3 persist 10k dialogs x 50 messages (\(kind))", configuration: configuration) { benchmark in
            for _ in benchmark.scaledIterations {
                let dao = DAO(storage: try W3.storage(kind), translator: W3DialogTranslator())
                benchmark.startMeasurement()
                try dao.persist(W3.plains)
                benchmark.stopMeasurement()
            }
        }
        Benchmark("W3 read all (\(kind))", configuration: configuration) { benchmark in
            let dao = DAO(storage: W3.filled[kind]!, translator: W3DialogTranslator())
            for _ in benchmark.scaledIterations { blackHole(try dao.read().count) }
        }
        Benchmark("W3 read isPinned ordered by id (\(kind))", configuration: configuration) { benchmark in
            let dao = DAO(storage: W3.filled[kind]!, translator: W3DialogTranslator())
            for _ in benchmark.scaledIterations {
                blackHole(try dao.read(predicatedBy: #Predicate { $0.isPinned == true }, orderedBy: \.id).count)
            }
        }
    }
}
