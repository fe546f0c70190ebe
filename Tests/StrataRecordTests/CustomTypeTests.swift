import Foundation
import Strata
import StrataRecord
import StrataTestBackends
import Testing

@Suite("ActiveRecord: custom column types")
struct CustomTypeTests {
    /// A custom column type: stored as "#RRGGBB".
    struct RGBColor: RecordRepresentable, Equatable {
        var red: UInt8, green: UInt8, blue: UInt8
        init(red: UInt8, green: UInt8, blue: UInt8) { (self.red, self.green, self.blue) = (red, green, blue) }
        var storedValue: String { "#" + [red, green, blue].map { String($0, radix: 16, uppercase: true).leftPadded() }.joined() }
        init(storedValue: String) throws {
            guard storedValue.count == 7, storedValue.first == "#", let value = UInt32(storedValue.dropFirst(), radix: 16) else {
                throw RecordError.corruptRecord(collection: "labels", reason: "'\(storedValue)' is not a #RRGGBB color")
            }
            (red, green, blue) = (UInt8(value >> 16), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF))
        }
    }

    struct Label: ActiveRecord {
        var id: Int64 = 0
        var createdAt = Date()
        var updatedAt = Date()
        var recordState = RecordState()
        var color = RGBColor(red: 0, green: 0, blue: 0)
        static let collectionName = "labels"
        static let schema = Schema<Label>.autoIncrementing(\.id)
    }

    struct StoredLabel: Model {
        var id: Int64
        var color: String
        static let collectionName = "labels"
        static let schema = Schema<StoredLabel>(primaryKey: \.id)
    }

    @Test("a custom column type round-trips through its stored representation", arguments: RecordBackend.available)
    func customType(_ backend: RecordBackend) throws {
        try withDatabase(backend) { db, _ in
            var label = Label(color: RGBColor(red: 255, green: 136, blue: 0))
            try label.save(on: db)
            #expect(try Label.find(label.id, on: db)?.color == RGBColor(red: 255, green: 136, blue: 0))
            #expect(try db.storage.read(StoredLabel.self, primaryKey: label.id)?.color == "#FF8800")
        }
    }
}
