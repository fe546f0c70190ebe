import Foundation
import Testing

/// Studio end to end in headless Chromium (Tests/StrataStudioTests/Browser/studio_browser.py,
/// Selenium): every view on a W1 file and on the demo file, a query typed in the form,
/// paging forward and back, hostile values shown as text, a commit from another process
/// appearing on the open page, and a damaged file showing its damage.
///
/// Needs Debian's chromium, chromium-driver and python3-selenium (scripts/setup.sh installs
/// them). Without them the test is skipped with a notice, except in CI (`CI` set), where
/// it fails. `STRATA_STUDIO_SCREENSHOTS=DIR` keeps the screenshots (docs/studio holds the
/// README's).
@Suite("Studio in a browser")
struct StudioBrowserTests {
    static let python = "/usr/bin/python3"
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Browser/studio_browser.py").path
    static let w1Count = 20_000

    /// What is missing for the browser test, or nil when it can run.
    static var missing: String? {
        for path in ["/usr/bin/chromium", "/usr/bin/chromedriver", python] where !FileManager.default.isExecutableFile(atPath: path) {
            return path
        }
        return (try? TestFiles.run(python, ["-c", "import selenium"])) == nil ? "python3-selenium" : nil
    }

    @Test("every view loads and answers in headless Chromium, live and safe")
    func everyViewInChromium() throws {
        if let missing = Self.missing {
            if ProcessInfo.processInfo.environment["CI"] != nil {
                Issue.record("CI must run Studio's browser test, and \(missing) is missing: scripts/setup.sh installs chromium, chromium-driver and python3-selenium")
            } else {
                print("Studio browser test skipped: \(missing) is missing (scripts/setup.sh installs it)")
            }
            return
        }
        let directory = try TestFiles.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (w1, demo, damaged) = (directory + "/w1.strata", directory + "/demo.strata", directory + "/damaged.strata")
        try TestFiles.w1(w1, count: Self.w1Count)
        try TestFiles.demo(demo)
        try TestFiles.damagedCopy(of: demo, to: damaged)
        let screenshots = ProcessInfo.processInfo.environment["STRATA_STUDIO_SCREENSHOTS"] ?? directory + "/screenshots"
        do {
            let output = try TestFiles.run(Self.python, [
                Self.script, "--storedump", TestFiles.binary("storedump"), "--fixture", TestFiles.binary("StrataStudioFixture"),
                "--w1", w1, "--w1-count", String(Self.w1Count), "--demo", demo, "--damaged", damaged, "--screenshots", screenshots,
            ])
            #expect(output.contains("ok: w1.strata") && output.contains("ok: demo.strata") && output.contains("ok: damaged.strata"))
        } catch {
            Issue.record("the browser test failed: \(error)")
        }
    }
}
