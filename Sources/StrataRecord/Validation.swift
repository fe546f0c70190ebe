import Foundation
import Strata

/// One failed validation: which model, which field, and a key naming the rule — a value an
/// app maps to its own localized message (the article's `ARError`), never prose.
public struct ValidationError: Error, Sendable, Hashable, DescribedError {
    /// The record type's collection name.
    public var model: String
    /// The field the rule checks.
    public var field: String
    /// Which rule failed.
    public var key: Key

    /// A rule's name; custom validations bring their own (`"notPrime"`).
    public struct Key: RawRepresentable, Sendable, Hashable, ExpressibleByStringLiteral {
        /// The name.
        public var rawValue: String
        /// A rule named `rawValue`.
        ///
        /// - Parameter rawValue: The rule's name, as errors and messages show it.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// A rule named by a literal.
        public init(stringLiteral value: String) { rawValue = value }

        /// `.presence`: the value is empty.
        public static let blank: Key = "blank"
        /// `.uniqueness`: another record holds the value.
        public static let taken: Key = "taken"
        /// `.length`: shorter than the minimum.
        public static let tooShort: Key = "tooShort"
        /// `.length`: longer than the maximum.
        public static let tooLong: Key = "tooLong"
        /// `.range`: outside the range.
        public static let outOfRange: Key = "outOfRange"
        /// `.format`: does not match the pattern.
        public static let invalidFormat: Key = "invalidFormat"
    }

    /// A failure of `key` on `model.field`.
    ///
    /// - Parameters:
    ///   - model: The model's name.
    ///   - field: The field's name.
    ///   - key: The rule that failed.
    public init(model: String, field: String, key: Key) {
        (self.model, self.field, self.key) = (model, field, key)
    }

    public var description: String { "\(model).\(field): \(key.rawValue)" }
}

/// `save()` stored nothing because the record is invalid; `errors` says why.
public struct RecordInvalid: Error, Sendable, CustomStringConvertible {
    /// Every rule the record breaks.
    public var errors: [ValidationError]
    public var description: String { "invalid record: " + errors.map(\.description).joined(separator: ", ") }
}

/// A custom rule for one value (the article's `ARValidatorProtocol`): returns the keys of
/// the rules the value breaks, none when it is valid.
///
/// ```swift
/// struct NotReserved: RecordValidator {
///     func validate(_ value: String) -> [ValidationError.Key] { ["admin", "root"].contains(value) ? ["reserved"] : [] }
/// }
/// static let validations: [Validation<User>] = [.custom(\.name, NotReserved())]
/// ```
public protocol RecordValidator<Value>: Sendable {
    associatedtype Value
    /// Checks one field's value.
    /// - Parameter value: The field's value.
    /// - Returns: The rules it breaks; empty when it is valid.
    func validate(_ value: Value) -> [ValidationError.Key]
}

/// A rule on one field of `M`, declared with the record type:
///
/// ```swift
/// static let validations: [Validation<User>] = [
///     .presence(\.name), .length(\.name, 2 ... 40), .format(\.email, #/^[^@\s]+@[^@\s]+$/#),
///     .uniqueness(\.email), .range(\.age, 0 ... 150),
/// ]
/// ```
public struct Validation<M: ActiveRecord>: @unchecked Sendable {
    let field: String
    let check: (M, any StorageReader) throws -> [ValidationError.Key]

    /// The string is not empty or only whitespace.
    ///
    /// - Parameter keyPath: The string field.
    /// - Returns: The rule; it fails with `.blank`.
    public static func presence(_ keyPath: KeyPath<M, String>) -> Validation {
        Validation(field: name(keyPath)) { record, _ in
            record[keyPath: keyPath].trimmingCharacters(in: .whitespacesAndNewlines).isEmpty ? [.blank] : []
        }
    }

    /// The optional is not nil.
    ///
    /// - Parameter keyPath: The optional field.
    /// - Returns: The rule; it fails with `.blank`.
    public static func presence<V>(_ keyPath: KeyPath<M, V?>) -> Validation {
        Validation(field: name(keyPath)) { record, _ in record[keyPath: keyPath] == nil ? [.blank] : [] }
    }

    /// The string's length (in characters) is within `range`.
    ///
    /// - Parameters:
    ///   - keyPath: The string field.
    ///   - range: The lengths allowed.
    /// - Returns: The rule; it fails with `.tooShort` or `.tooLong`.
    public static func length(_ keyPath: KeyPath<M, String>, _ range: ClosedRange<Int>) -> Validation {
        Validation(field: name(keyPath)) { record, _ in
            let count = record[keyPath: keyPath].count
            return count < range.lowerBound ? [.tooShort] : count > range.upperBound ? [.tooLong] : []
        }
    }

    /// The value is within `range`.
    ///
    /// - Parameters:
    ///   - keyPath: The field.
    ///   - range: The values allowed.
    /// - Returns: The rule; it fails with `.outOfRange`.
    public static func range<V: Comparable>(_ keyPath: KeyPath<M, V>, _ range: ClosedRange<V>) -> Validation {
        Validation(field: name(keyPath)) { record, _ in range.contains(record[keyPath: keyPath]) ? [] : [.outOfRange] }
    }

    /// The whole string matches `pattern`.
    ///
    /// - Parameters:
    ///   - keyPath: The string field.
    ///   - pattern: The pattern the whole string must match.
    /// - Returns: The rule; it fails with `.invalidFormat`.
    public static func format(_ keyPath: KeyPath<M, String>, _ pattern: Regex<Substring>) -> Validation {
        Validation(field: name(keyPath)) { record, _ in
            (try? pattern.wholeMatch(in: record[keyPath: keyPath])) != nil ? [] : [.invalidFormat]
        }
    }

    /// No other record has the same value. Declare a unique index on the field too
    /// (`.unique(\.email)` in the schema): the check here gives a friendly error before
    /// writing, the index makes it hold when two saves race.
    ///
    /// - Parameter keyPath: The field.
    /// - Returns: The rule; it fails with `.taken`.
    public static func uniqueness<V: KeyComponent & Equatable & Sendable>(_ keyPath: KeyPath<M, V>) -> Validation {
        Validation(field: name(keyPath)) { record, reader in
            let value = record[keyPath: keyPath]
            let others = try reader.read(M.filter(keyPath == value).limit(2))
            return others.contains { $0.id != record.id } ? [.taken] : []
        }
    }

    /// A custom validator on one field.
    ///
    /// - Parameters:
    ///   - keyPath: The field.
    ///   - validator: Checks the field's value.
    /// - Returns: The rule; it fails with the keys the validator returns.
    public static func custom<V, Validator: RecordValidator>(_ keyPath: KeyPath<M, V>, _ validator: Validator) -> Validation
    where Validator.Value == V {
        Validation(field: name(keyPath)) { record, _ in validator.validate(record[keyPath: keyPath]) }
    }

    static func name(_ keyPath: AnyKeyPath) -> String { M.schema.description.name(of: keyPath) }
}
