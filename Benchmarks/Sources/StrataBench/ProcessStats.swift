// What the kernel counts for this process: bytes written and resident memory (Linux /proc).
import Foundation

enum ProcessStats {
    /// Bytes this process has passed to write(2), pwrite(2) and their relatives, all threads
    /// (`wchar` of /proc/self/io): what an engine asks the kernel to write, before the page
    /// cache. Nil where /proc is absent.
    static func bytesWritten() -> Double? {
        field("wchar:", in: "/proc/self/io")
    }

    /// The resident set now and its peak since the last `resetPeakResident()`, in bytes
    /// (`VmRSS`, `VmHWM` of /proc/self/status; memory-mapped file pages count, as they do for
    /// LMDB's readers).
    static func resident() -> (current: Double, peak: Double)? {
        guard let current = field("VmRSS:", in: "/proc/self/status"), let peak = field("VmHWM:", in: "/proc/self/status") else { return nil }
        return (current * 1024, peak * 1024)
    }

    /// Starts a new peak: writing 5 to /proc/self/clear_refs resets VmHWM to the current
    /// resident set (Linux 4.0 and later).
    static func resetPeakResident() {
        try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
    }

    /// The number after `name` on its line of the file at `path`.
    private static func field(_ name: String, in path: String) -> Double? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8),
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix(name) }) else { return nil }
        // "VmHWM:\t  123456 kB": the fields are separated by tabs and spaces.
        return line.dropFirst(name.count).split(whereSeparator: { $0 == " " || $0 == "\t" }).first.flatMap { Double($0) }
    }
}
