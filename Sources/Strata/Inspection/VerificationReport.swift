import Foundation
import StrataEngine

/// What checking a whole file found: the engine's checks (checksums, pages, B-tree
/// invariants, out-of-line values, the commit chain) and, unless quick, every collection's
/// indexes against its records. `storedump verify` prints it; Studio's verify view shows it.
///
/// ```swift
/// let report = try VerificationReport.verify(path: "app.strata")
/// if !report.clean { report.faults.forEach { print($0) } }
/// ```
public struct VerificationReport: Codable, Sendable, Equatable {
    /// No fault of severity `error` (warnings, such as a torn tail, leave a file clean).
    public var clean: Bool
    /// Every fault found, errors and warnings.
    public var faults: [Inspector.Fault]
    /// False when the damage stops the file from opening at all: `faults` then holds that
    /// one finding, and `storedump frames` walks the rest of the file.
    public var opens: Bool

    /// A report of `faults`; clean when none is an error.
    ///
    /// - Parameters:
    ///   - faults: What the checks found.
    ///   - opens: Whether the file opened at all (false: the faults say why not).
    public init(faults: [Inspector.Fault], opens: Bool = true) {
        self.faults = faults
        self.opens = opens
        clean = !faults.contains { $0.severity == .error }
    }

    /// Verifies the file at `path`, opened read-only: it never takes the writer's lock, so
    /// an app may keep writing (the check covers the state as of opening).
    ///
    /// - Parameters:
    ///   - path: the file.
    ///   - quick: only frame checksums and the commit chain; no trees, no indexes.
    ///   - progress: (bytes done, bytes total) as frames are checked.
    /// - Returns: the faults found; damage that stops the file opening is one of them.
    /// - Throws: `StrataError` when the file cannot be read at all (missing, unreadable,
    ///   not a Strata file).
    public static func verify(path: String, quick: Bool = false, progress: ((UInt64, UInt64) -> Void)? = nil) throws -> VerificationReport {
        let inspector: Inspector
        do {
            inspector = try Inspector(path: path)
        } catch let StrataError.corruption(_, offset, reason) {
            // Damage that stops the file from opening is itself the finding.
            return VerificationReport(faults: [Inspector.Fault(severity: .error, offset: offset, message: reason)], opens: false)
        }
        var faults = try inspector.verify(quick: quick, progress: progress)
        if !quick {
            do {
                faults += try CollectionInspector(snapshot: inspector.database.snapshot()).verifyIndexes()
                    .map { Inspector.Fault(severity: .error, offset: 0, message: $0) }
            } catch {
                // Faults found so far are reported with the one that stopped the index checks.
                faults.append(Inspector.Fault(severity: .error, offset: 0, message: "indexes not checked: \(error)"))
            }
        }
        return VerificationReport(faults: faults)
    }
}
