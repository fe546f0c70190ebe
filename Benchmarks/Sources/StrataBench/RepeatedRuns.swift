// How many times a read-only op runs, and the figure its runs give.
import Foundation

/// The runs of one op: a read-only op runs at least `minimumRuns` times and on while
/// they have taken less than `targetSeconds`, up to `maximumRuns`; its figure is the median
/// run. Any other op runs once. The median rather than the fastest: a figure this VM can
/// reach only on a quiet moment is not one an app sees.
struct RepeatedRuns {
    static let minimumRuns = 3
    static let maximumRuns = 9
    static let targetSeconds = 1.0

    private let repeated: Bool
    private(set) var seconds: [Double] = []

    init(repeated: Bool) { self.repeated = repeated }

    mutating func add(_ run: Double) { seconds.append(run) }

    var wantsAnother: Bool {
        guard repeated, seconds.count < Self.maximumRuns else { return false }
        return seconds.count < Self.minimumRuns || seconds.reduce(0, +) < Self.targetSeconds
    }

    /// The median run (of an even count, the faster of the middle two).
    var median: Double { seconds.sorted()[(seconds.count - 1) / 2] }

    /// What the progress line says of the runs: nothing for one.
    var summary: String {
        guard seconds.count > 1, let fastest = seconds.min(), let slowest = seconds.max() else { return "" }
        return String(format: " (median of %d; runs %.0f–%.0f ms)", seconds.count, fastest * 1000, slowest * 1000)
    }
}
