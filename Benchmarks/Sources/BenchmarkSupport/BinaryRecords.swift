// The bytes the key-value engines (Strata's engine, LMDB, LevelDB) store for W1 and W2:
// one fixed binary layout, so each engine is measured on exactly the same keys and values.
import Foundation

/// Keys: the id as 8 big-endian bytes (byte order = numeric order for ids >= 0).
public enum BinaryKey {
    @inline(__always)
    public static func withKey<R>(_ id: Int64, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        var bigEndian = UInt64(bitPattern: id).bigEndian
        return try withUnsafeBytes(of: &bigEndian) { try body($0) }
    }

    @inline(__always)
    public static func id(_ key: UnsafeRawBufferPointer) -> Int64 {
        Int64(bitPattern: UInt64(bigEndian: key.loadUnaligned(fromByteOffset: key.count - 8, as: UInt64.self)))
    }

    /// An age-index key: the age byte, then the id.
    public static func ageIndexKey(age: Int, id: Int64) -> [UInt8] {
        [UInt8(age)] + withKey(id) { Array($0) }
    }
}

/// W1 user value: age u8 | score f64 LE | createdAt i64 LE | name len u8, bytes | email len u8, bytes.
public enum BinaryUser {
    public static let ageOffset = 0

    public static func encode(_ user: User, into bytes: inout [UInt8]) {
        bytes.removeAll(keepingCapacity: true)
        bytes.append(UInt8(user.age))
        withUnsafeBytes(of: user.score.bitPattern.littleEndian) { bytes.append(contentsOf: $0) }
        withUnsafeBytes(of: user.createdAt.littleEndian) { bytes.append(contentsOf: $0) }
        bytes.append(UInt8(user.name.utf8.count))
        bytes.append(contentsOf: user.name.utf8)
        bytes.append(UInt8(user.email.utf8.count))
        bytes.append(contentsOf: user.email.utf8)
    }

    @inline(__always)
    public static func age(_ value: UnsafeRawBufferPointer) -> Int { Int(value[ageOffset]) }

    public static func decode(id: Int64, _ value: UnsafeRawBufferPointer) -> User {
        let score = Double(bitPattern: UInt64(littleEndian: value.loadUnaligned(fromByteOffset: 1, as: UInt64.self)))
        let createdAt = Int64(littleEndian: value.loadUnaligned(fromByteOffset: 9, as: Int64.self))
        let nameLength = Int(value[17])
        let name = String(decoding: UnsafeRawBufferPointer(rebasing: value[18 ..< 18 + nameLength]), as: UTF8.self)
        let emailStart = 19 + nameLength
        let email = String(decoding: UnsafeRawBufferPointer(rebasing: value[emailStart ..< emailStart + Int(value[18 + nameLength])]), as: UTF8.self)
        return User(id: id, name: name, email: email, age: Int(value[0]), score: score, createdAt: createdAt)
    }
}

/// W2 document value: title len u16 LE, bytes | body len u32 LE, bytes | tag count u8, then len u8 + bytes each.
public enum BinaryDocument {
    public static func encode(_ doc: Document, into bytes: inout [UInt8]) {
        bytes.removeAll(keepingCapacity: true)
        withUnsafeBytes(of: UInt16(doc.title.utf8.count).littleEndian) { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: doc.title.utf8)
        withUnsafeBytes(of: UInt32(doc.body.utf8.count).littleEndian) { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: doc.body.utf8)
        bytes.append(UInt8(doc.tags.count))
        for tag in doc.tags {
            bytes.append(UInt8(tag.utf8.count))
            bytes.append(contentsOf: tag.utf8)
        }
    }

    public static func decode(id: Int64, _ value: UnsafeRawBufferPointer) -> Document {
        var offset = 0
        func string(length: Int) -> String {
            defer { offset += length }
            return String(decoding: UnsafeRawBufferPointer(rebasing: value[offset ..< offset + length]), as: UTF8.self)
        }
        let titleLength = Int(UInt16(littleEndian: value.loadUnaligned(as: UInt16.self)))
        offset = 2
        let title = string(length: titleLength)
        let bodyLength = Int(UInt32(littleEndian: value.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
        offset += 4
        let body = string(length: bodyLength)
        let tagCount = Int(value[offset])
        offset += 1
        var tags: [String] = []
        tags.reserveCapacity(tagCount)
        for _ in 0 ..< tagCount {
            let length = Int(value[offset])
            offset += 1
            tags.append(string(length: length))
        }
        return Document(id: id, title: title, body: body, tags: tags)
    }

    /// Whether the document's tags include `tag`, reading only the tags.
    public static func hasTag(_ tag: [UInt8], _ value: UnsafeRawBufferPointer) -> Bool {
        let titleLength = Int(UInt16(littleEndian: value.loadUnaligned(as: UInt16.self)))
        var offset = 2 + titleLength
        let bodyLength = Int(UInt32(littleEndian: value.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
        offset += 4 + bodyLength
        let tagCount = Int(value[offset])
        offset += 1
        for _ in 0 ..< tagCount {
            let length = Int(value[offset])
            offset += 1
            if length == tag.count, memcmp(value.baseAddress! + offset, tag, length) == 0 { return true }
            offset += length
        }
        return false
    }
}

/// A page of `size` bytes packed with binary W1 users, for LZ4 measurements.
public func w1Page(size: Int) -> [UInt8] {
    var rng = SplitMix(state: 1)
    var page: [UInt8] = [], record: [UInt8] = []
    var id = 0
    while page.count < size {
        BinaryUser.encode(User.make(id, rng: &rng), into: &record)
        page += record
        id += 1
    }
    return Array(page.prefix(size))
}
