import ArgumentParser
import Logging
import NIOPosix
import SimpleTunnelServices

struct Config: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print the server's configuration (fetchConfiguration) as JSON.")

    @OptionGroup var connection: ConnectionOptions

    func run() async throws {
        let logger = connection.makeLogger()
        do {
            let tunnel = try await TunnelClientConnection.connect(
                settings: try connection.connectionSettings(), group: MultiThreadedEventLoopGroup.singleton, logger: logger)
            print(PropertyListValue.dictionary(tunnel.serverConfiguration).jsonText())
            await tunnel.close()
        } catch {
            logger.critical("\(userFacing(error))")
            throw ExitCode(1)
        }
    }
}
