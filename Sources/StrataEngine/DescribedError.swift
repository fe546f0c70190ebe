import Foundation

/// An error whose `description` says what happened and what to do, and which Foundation
/// reports with that same text: `error.localizedDescription`, and SwiftUI's and AppKit's
/// alerts, show the description rather than "The operation couldn't be completed
/// (… error 0.)". Every public error type of Strata's modules adopts it.
///
/// ```swift
/// do { try repository.update(item) } catch {
///     print(error.localizedDescription)   // "no item with id '42'"
/// }
/// ```
public protocol DescribedError: LocalizedError, CustomStringConvertible {}

extension DescribedError {
    public var errorDescription: String? { description }
}
