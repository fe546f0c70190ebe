// W1 of ../../../shared/WORKLOAD.md: small user records, the headline workload.
import Strata

/// W1's record: a user with an `Int64` primary key and five small fields. As a Strata model
/// it is plain `Codable` (no declared fields, no generated codec): strata-bench's
/// `strata-typed-codable` row; `FastUser` is the same record as `@StoredModel` writes it.
public struct User: Model, Equatable {
    public var id: Int64
    public var name: String
    public var email: String
    public var age: Int
    public var score: Double
    public var createdAt: Int64

    public static let schema = Schema<User>(primaryKey: \.id)

    public init(id: Int64, name: String, email: String, age: Int, score: Double, createdAt: Int64) {
        (self.id, self.name, self.email, self.age, self.score, self.createdAt) = (id, name, email, age, score, createdAt)
    }

    /// The user with id `id`, its fields drawn from `rng` as WORKLOAD.md describes.
    public static func make(_ id: Int, rng: inout SplitMix) -> User {
        let length = Int(rng.next() % 9) + 8
        var name = ""
        name.reserveCapacity(length)
        for _ in 0 ..< length { name.unicodeScalars.append(UnicodeScalar(UInt8(97 + rng.next() % 26))) }
        return User(id: Int64(id), name: name, email: name + "@example.com", age: Int(18 + rng.next() % 73),
                    score: Double(rng.next() % 10_000) / 100, createdAt: 1_700_000_000 + Int64(rng.next() % 10_000_000))
    }
}

extension User {
    /// This user with its name and email in storage of their own, made now.
    var withStringsMadeAgain: User {
        User(id: id, name: Self.madeAgain(name), email: Self.madeAgain(email), age: age, score: score, createdAt: createdAt)
    }

    private static func madeAgain(_ string: String) -> String {
        var copy = ""
        copy.reserveCapacity(string.utf8.count)
        copy.append(contentsOf: string)
        return copy
    }
}

/// The same collection ("User") declared with a secondary index on `age`: opening it on a
/// collection that already holds users builds the index, as `scan.index` needs.
public struct UserByAge: Model {
    public var id: Int64
    public var name: String
    public var email: String
    public var age: Int
    public var score: Double
    public var createdAt: Int64

    public static let collectionName = "User"
    public static let schema = Schema<UserByAge>(primaryKey: \.id, indexes: [.index(\.age)])

    public init(id: Int64, name: String, email: String, age: Int, score: Double, createdAt: Int64) {
        (self.id, self.name, self.email, self.age, self.score, self.createdAt) = (id, name, email, age, score, createdAt)
    }
}

/// The W1 data set: N users inserted in shuffled order, the lookup order, the updates.
/// Built from a fixed seed, so every engine gets the same records in the same order.
public struct W1Data: Sendable {
    /// Users indexed by id.
    public private(set) var users: [User]
    /// The insertion order (ids 0 ..< N, shuffled).
    public let insertOrder: [Int64]
    /// `lookups` random ids for `get`.
    public let lookups: [Int64]
    /// `(id, new score)` pairs for `update`.
    public let updates: [(id: Int64, score: Double)]
    /// Users with ids N ..< N + 1,000, inserted one per transaction by `commit.durable`.
    public let durableUsers: [User]

    public static let ageRange = 30 ... 40

    public init(records: Int, lookups: Int, updates: Int, durableCommits: Int, seed: UInt64 = 42) {
        var rng = SplitMix(state: seed)
        users = (0 ..< records).map { User.make($0, rng: &rng) }
        insertOrder = (0 ..< Int64(records)).shuffled(using: &rng)
        self.lookups = (0 ..< lookups).map { _ in Int64(rng.next() % UInt64(records)) }
        self.updates = (0 ..< updates).map { _ in (Int64(rng.next() % UInt64(records)), Double(rng.next() % 10_000) / 100) }
        durableUsers = (records ..< records + durableCommits).map { User.make($0, rng: &rng) }
    }

    /// The users in insertion order, each with its strings made again as it is taken, so
    /// that they lie in memory in the order the loaders read them, as the records an app
    /// inserts lie where it just made them.
    ///
    /// Why: `users` is made in id order and the insertion order is shuffled, so a loader
    /// reading these users shared their strings with `users` and read each email (and each
    /// name of 16 letters, past a small string) at a random address: at 10M records a cache
    /// and TLB miss or two per record, 44% of the load's writer thread in a perf window of
    /// W1 insert.batch (`swift_retain` on the strings' cold headers), paid by every engine
    /// and growing with N. The harness measured its own data there, not the engine.
    public var usersInInsertOrder: [User] { insertOrder.map { users[Int($0)].withStringsMadeAgain } }

    public func expectedGet() -> Checksum {
        var sum = Checksum()
        for id in lookups { sum.add(users[Int(id)]) }
        return sum
    }

    public func expectedAgeFilter() -> Checksum {
        var sum = Checksum()
        for user in users where Self.ageRange.contains(user.age) { sum.add(user) }
        return sum
    }

    /// Applies the updates, as every engine does; later updates of an id win.
    public mutating func applyUpdates() {
        for (id, score) in updates { users[Int(id)].score = score }
    }

    /// Every user after `update` and `commit.durable`.
    public func expectedAll() -> Checksum {
        var sum = Checksum()
        for user in users { sum.add(user) }
        for user in durableUsers { sum.add(user) }
        return sum
    }
}

/// A count and a sum of digests: what an engine read, in a form that cannot match by chance.
public struct Checksum: Equatable, Sendable, CustomStringConvertible {
    public var count = 0
    public var sum: UInt64 = 0

    public init() {}

    @inlinable public mutating func add(_ user: User) { add(user.digest) }
    @inlinable public mutating func add(_ digest: UInt64) { count += 1; sum &+= digest }
    /// Adds the records `other` counted: the checksum of a read split among threads.
    public mutating func add(_ other: Checksum) { count += other.count; sum &+= other.sum }

    public var description: String { "\(count) records, digest \(String(sum, radix: 16))" }
}

/// SplitMix64: a small, fast, seedable generator, so runs are reproducible.
public struct SplitMix: RandomNumberGenerator, Sendable {
    public var state: UInt64
    public init(state: UInt64) { self.state = state }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}


/// A typed model of W1's user, so one benchmark runner serves every way of declaring it.
public protocol W1Row: Model {
    init(_ user: User)
    var score: Double { get set }
    var digest: UInt64 { get }
}

extension User: W1Row, UserFields {}

extension UserByAge: W1Row {}
extension FastUser: W1Row {}
extension FastUserByAge: W1Row {}

/// The six stored fields of the W1 models besides `User`, converted in one place.
public protocol UserFields {
    var id: Int64 { get set }
    var name: String { get set }
    var email: String { get set }
    var age: Int { get set }
    var score: Double { get set }
    var createdAt: Int64 { get set }
    init(id: Int64, name: String, email: String, age: Int, score: Double, createdAt: Int64)
}

extension UserFields {
    public init(_ u: User) { self.init(id: u.id, name: u.name, email: u.email, age: u.age, score: u.score, createdAt: u.createdAt) }
    public var user: User { User(id: id, name: name, email: email, age: age, score: score, createdAt: createdAt) }

    /// A value that changes when any field changes: what the benchmark runners add up to
    /// check that an engine read back what was written. Computed from the fields of
    /// whatever type an engine decodes into, not from a `User` made from them: that copy
    /// retained and released both strings, ~480 instructions per record read (callgrind,
    /// typed scan.filter), which some engines' rows paid and others did not.
    @inlinable
    public var digest: UInt64 {
        var h = UInt64(bitPattern: id) &* 0x9E37_79B9_7F4A_7C15
        h ^= UInt64(age) &* 0xC2B2_AE3D_27D4_EB4F
        h ^= score.bitPattern &* 0x1656_67B1_9E37_79F9
        h ^= UInt64(bitPattern: createdAt) &* 0x27D4_EB2F_1656_67C5
        h ^= UInt64(name.utf8.count) &<< 48 ^ UInt64(email.utf8.count) &<< 56
        h ^= UInt64(name.utf8.first ?? 0) &<< 40 ^ UInt64(email.utf8.last ?? 0) &<< 32
        return h
    }
}

extension UserByAge: UserFields {}

/// W1's user as `@StoredModel` generates it (written out, so the benchmark package does not
/// build swift-syntax): declared fields and the `RecordCodable` codec. The same values as
/// `User`, its number-like fields stored first.
public struct FastUser: Model, RecordCodable, Equatable, UserFields {
    public var id: Int64
    public var name: String
    public var email: String
    public var age: Int
    public var score: Double
    public var createdAt: Int64

    public static let collectionName = "User"
    public static let schema = Schema<FastUser>(primaryKey: \.id)
    public static let storedFields: [StoredField<FastUser>] = [
        .field(\.id), .field(\.name), .field(\.email), .field(\.age), .field(\.score), .field(\.createdAt),
    ]

    public init(id: Int64, name: String, email: String, age: Int, score: Double, createdAt: Int64) {
        (self.id, self.name, self.email, self.age, self.score, self.createdAt) = (id, name, email, age, score, createdAt)
    }

    public func encode(to record: inout RecordWriter) throws { try encodeUserFields(self, to: &record) }
    public init(from record: inout RecordReader) throws { self = try decodeUserFields(from: &record) }
}

/// `FastUser` with the secondary index on `age` that `scan.index` builds.
public struct FastUserByAge: Model, RecordCodable, UserFields {
    public var id: Int64
    public var name: String
    public var email: String
    public var age: Int
    public var score: Double
    public var createdAt: Int64

    public static let collectionName = "User"
    public static let schema = Schema<FastUserByAge>(primaryKey: \.id, indexes: [.index(\.age)])
    public static let storedFields: [StoredField<FastUserByAge>] = [
        .field(\.id), .field(\.name), .field(\.email), .field(\.age), .field(\.score), .field(\.createdAt),
    ]

    public init(id: Int64, name: String, email: String, age: Int, score: Double, createdAt: Int64) {
        (self.id, self.name, self.email, self.age, self.score, self.createdAt) = (id, name, email, age, score, createdAt)
    }

    public func encode(to record: inout RecordWriter) throws { try encodeUserFields(self, to: &record) }
    public init(from record: inout RecordReader) throws { self = try decodeUserFields(from: &record) }
}

/// The generated codec's body, shared by the two fast models: number-like fields first, as
/// `@StoredModel`'s record coding orders them.
@inline(__always)
func encodeUserFields(_ user: some UserFields, to record: inout RecordWriter) throws {
    try record.encode(user.id, forKey: "id")
    try record.encode(user.age, forKey: "age")
    try record.encode(user.score, forKey: "score")
    try record.encode(user.createdAt, forKey: "createdAt")
    try record.encode(user.name, forKey: "name")
    try record.encode(user.email, forKey: "email")
}

@inline(__always)
func decodeUserFields<U: UserFields>(from record: inout RecordReader) throws -> U {
    let id = try record.decode(Int64.self, forKey: "id"), age = try record.decode(Int.self, forKey: "age")
    let score = try record.decode(Double.self, forKey: "score"), createdAt = try record.decode(Int64.self, forKey: "createdAt")
    return U(id: id, name: try record.decode(String.self, forKey: "name"), email: try record.decode(String.self, forKey: "email"),
             age: age, score: score, createdAt: createdAt)
}
