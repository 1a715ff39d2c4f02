import ArgumentParser
import Logging
import SimpleTunnelServices

/// `tunnel-client cleanup`: undoes what `tunnel-client ip` processes that
/// ended without their own cleanup (SIGKILL, a crash) left outside their devices.
struct Cleanup: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Remove what a crashed `tunnel-client ip` left behind: routes, the kill switch, resolv.conf.",
        discussion: """
            `tunnel-client ip` keeps a record of each change it makes outside its device in its state folder, and removes \
            it on a clean stop. After a crash the record stays; this undoes it (as the next `tunnel-client ip` does \
            at its start). Records of clients still running, or made in another network namespace, are left alone. \
            Exits 1 when something could not be undone; its record stays for another try.
            """
    )

    @Option(
        name: .customLong("state-directory"),
        help: "The folder `tunnel-client ip` was given with --state-directory. Default: /run/simpletunnel-client for root, else $XDG_RUNTIME_DIR/simpletunnel or /tmp/simpletunnel-UID.")
    var stateDirectory: String?

    func run() throws {
        let folder = stateDirectory ?? NetworkUndoJournal.defaultFolder()
        let report: NetworkLeftoverReport
        do {
            report = try NetworkLeftovers.clean(folder: folder)
        } catch {
            throw ValidationError("\(error)")
        }
        for (processID, steps) in report.undone {
            print("removed what tunnel-client (pid \(processID)) left behind:")
            for step in steps { print("  \(step)") }
        }
        for line in report.left { print("left alone: \(line)") }
        for line in report.failures { print("could not undo: \(line)") }
        if report.undone.isEmpty && report.failures.isEmpty { print("nothing to clean up in \(folder)") }
        if !report.failures.isEmpty { throw ExitCode(1) }
    }

    /// The same report, as `tunnel-client ip` logs it at its start.
    static func log(_ report: NetworkLeftoverReport, logger: Logger) {
        for (processID, steps) in report.undone {
            logger.notice("removed what a previous tunnel-client (pid \(processID)) left behind: \(steps.joined(separator: "; "))")
        }
        for line in report.left { logger.notice("left alone: \(line)") }
        for line in report.failures { logger.warning("could not undo what a previous tunnel-client left: \(line)") }
    }
}
