import Foundation

/// The Python stand-ins for Apple's SimpleTunnel sample in Tests/AppleSamplePeers:
/// `sample_client.py` (its app proxy) and `sample_server.py` (its tunnel_server).
enum AppleSamplePeers {
    static let folder = RepositoryPaths.root.appendingPathComponent("Tests/AppleSamplePeers")
    static let available = TestRequirements.met(ExternalProcess.isPythonAvailable, "python3")

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Runs one scenario of the sample client against a server on 127.0.0.1:`port`
    /// and returns the JSON object it prints.
    static func client(port: Int, _ scenario: String, _ arguments: [String], timeout: Double = 60) async throws -> [String: Any] {
        try await report(of: startClient(port: port, scenario, arguments), scenario, timeout: timeout)
    }

    /// Starts a scenario and leaves it running; `report(of:)` waits for its JSON.
    static func startClient(port: Int, _ scenario: String, _ arguments: [String]) throws -> ExternalProcess {
        let script = folder.appendingPathComponent("sample_client.py").path
        return try ExternalProcess(["python3", script, "--port", "\(port)", scenario] + arguments)
    }

    static func report(of process: ExternalProcess, _ scenario: String, timeout: Double = 60) async throws -> [String: Any] {
        let (status, output) = await process.finish(timeout: timeout)
        guard status == 0, let line = output.split(separator: "\n").last(where: { $0.hasPrefix("{") }),
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        else {
            throw Failure(description: "sample_client.py \(scenario) exited \(status): \(output)")
        }
        return object
    }

    /// Starts the sample server; returns it and the port it listens on.
    static func server() async throws -> (process: ExternalProcess, port: Int) {
        let script = folder.appendingPathComponent("sample_server.py").path
        let process = try ExternalProcess(["python3", script])
        guard let output = await process.waitForOutput(containing: "\n", timeout: 60),  // a loaded machine starts Python slowly
            let port = output.split(separator: "\n").first.flatMap({ Int($0.trimmingCharacters(in: .whitespaces)) })
        else {
            process.terminate()
            throw Failure(description: "sample_server.py did not start: \(process.outputSoFar)")
        }
        return (process, port)
    }
}
