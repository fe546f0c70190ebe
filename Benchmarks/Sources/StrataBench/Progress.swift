import Foundation

/// Progress on stderr: which workload, engine and op is running, with a bar for long ops.
/// The table goes to stdout, so `strata-bench > table.txt` still shows progress.
final class Progress {
    private let enabled: Bool
    private var label = ""
    private var lastDraw = ContinuousClock.now
    private let width = 30

    init(enabled: Bool) { self.enabled = enabled }

    /// Starts a new line for `label` ("W1 sqlite insert.batch").
    func begin(_ label: String) {
        self.label = label
        draw(fraction: nil)
    }

    /// Reports `done` of `total` units; redraws at most 10 times a second.
    @inline(__always)
    func update(_ done: Int, of total: Int) {
        guard enabled, done & 0x3FF == 0 || done == total else { return }
        let now = ContinuousClock.now
        guard now - lastDraw > .milliseconds(100) else { return }
        lastDraw = now
        draw(fraction: total > 0 ? Double(done) / Double(total) : nil)
    }

    /// Ends the line with the result.
    func end(_ result: String) {
        guard enabled else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[K\(label): \(result)\n".utf8))
    }

    /// A line of its own (what is being prepared, a verification, a note).
    func note(_ text: String) {
        guard enabled else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[K\(text)\n".utf8))
    }

    private func draw(fraction: Double?) {
        guard enabled else { return }
        var line = "\r\u{1B}[K\(label)"
        if let fraction {
            let filled = Int(fraction * Double(width))
            line += " [" + String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled) + "] "
            line += String(format: "%3.0f%%", fraction * 100)
        } else {
            line += " …"
        }
        FileHandle.standardError.write(Data(line.utf8))
    }
}
