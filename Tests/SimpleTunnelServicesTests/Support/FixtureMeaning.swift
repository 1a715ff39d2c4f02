import Foundation
import NIOCore
@testable import SimpleTunnelServices

/// Reads the fixtures' JSON meanings (schema in Fixtures/README.md) into the
/// values a correct decoder must produce. Written independently of the
/// decoder, so that the two can disagree.
enum FixtureMeaning {
    struct Invalid: Error, CustomStringConvertible {
        var description: String
    }

    struct ExpectedError {
        var kind: String
        var disposition: String
        var key: String?
        var identifier: Int64?
    }

    static func object(at url: URL) throws -> [String: Any] {
        guard let object = try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any] else {
            throw Invalid(description: "\(url.lastPathComponent) is not a JSON object")
        }
        return object
    }

    static func expectedError(_ meaning: [String: Any]) throws -> ExpectedError {
        guard let error = meaning["error"] as? [String: Any], let kind = error["kind"] as? String,
            let disposition = error["disposition"] as? String
        else {
            throw Invalid(description: "no error.kind / error.disposition")
        }
        return ExpectedError(
            kind: kind, disposition: disposition,
            key: error["key"] as? String,
            identifier: (error["identifier"] as? NSNumber)?.int64Value
        )
    }

    static func message(_ meaning: [String: Any]) throws -> TunnelMessage {
        guard let fields = meaning["message"] as? [String: Any], let command = fields["command"] as? String else {
            throw Invalid(description: "no message.command")
        }
        let identifier = try int64(fields["identifier"], "identifier")
        switch command {
        case "data":
            var endpoint: TunnelEndpoint?
            if let host = fields["host"] as? String {
                endpoint = TunnelEndpoint(host: host, port: Int(try int64(fields["port"], "port")))
            }
            return .data(identifier: identifier, payload: try bytes(fields["data"]), endpoint: endpoint)
        case "suspend":
            return .suspend(identifier: identifier)
        case "resume":
            return .resume(identifier: identifier)
        case "close":
            let directions: [String: TunnelConnectionCloseDirection] = ["none": .none, "read": .read, "write": .write, "all": .all]
            guard let direction = (fields["direction"] as? String).flatMap({ directions[$0] }) else {
                throw Invalid(description: "bad close direction")
            }
            return .close(identifier: identifier, direction: direction)
        case "dns":
            return .dns(identifier: identifier, packet: try bytes(fields["dnsPacket"]), source: fields["dnsPacketSource"] as? String)
        case "open":
            switch (fields["tunnelType"] as? String, fields["flowKind"] as? String) {
            case ("ip", _):
                return .open(identifier: identifier, request: .plainIP)
            case ("app", "udp"):
                return .open(identifier: identifier, request: .udp)
            case ("app", "tcp"):
                guard let host = fields["host"] as? String else { throw Invalid(description: "TCP open without host") }
                return .open(identifier: identifier, request: .tcp(TunnelEndpoint(host: host, port: Int(try int64(fields["port"], "port")))))
            default:
                throw Invalid(description: "bad open")
            }
        case "openResult":
            return .openResult(
                identifier: identifier, result: try result(fields["result"]),
                configuration: try fields["configuration"].map { try configuration($0) }
            )
        case "packets":
            guard let packets = fields["packets"] as? [Any], let protocols = fields["protocols"] as? [Any], packets.count == protocols.count else {
                throw Invalid(description: "bad packets")
            }
            return .packets(identifier: identifier, packets: try zip(packets, protocols).map { packet, number in
                TunnelPacket(bytes: try bytes(packet), protocolNumber: try int64(number, "protocols"))
            })
        case "fetchConfiguration":
            return .fetchConfiguration(identifier: identifier, configuration: try fields["configuration"].map { try configuration($0) })
        case "authenticate":
            guard let login = fields["login"] as? String, let password = fields["password"] as? String else {
                throw Invalid(description: "authenticate without login or password")
            }
            return .authenticate(login: login, password: password)
        case "authenticateResult":
            return .authenticateResult(try result(fields["result"]))
        default:
            throw Invalid(description: "unknown command \(command)")
        }
    }

    static func int64(_ value: Any?, _ name: String) throws -> Int64 {
        guard let number = value as? NSNumber else { throw Invalid(description: "\(name) is not a number") }
        return number.int64Value
    }

    static func result(_ value: Any?) throws -> TunnelConnectionOpenResult {
        let results: [String: TunnelConnectionOpenResult] = [
            "success": .success, "invalidParameter": .invalidParameter, "noSuchHost": .noSuchHost,
            "refused": .refused, "timeout": .timeout, "internalError": .internalError,
        ]
        guard let result = (value as? String).flatMap({ results[$0] }) else { throw Invalid(description: "bad result \(String(describing: value))") }
        return result
    }

    /// `{"hex": "..."}` or `{"counter": N}`.
    static func bytes(_ value: Any?) throws -> ByteBuffer {
        if let object = value as? [String: Any] {
            if let hex = object["hex"] as? String { return ByteBuffer(hex: hex) }
            if let count = object["counter"] as? Int { return ByteBuffer(counter: count) }
        }
        throw Invalid(description: "bad bytes \(String(describing: value))")
    }

    static func configuration(_ value: Any) throws -> [String: PropertyListValue] {
        guard case .dictionary(let entries) = try propertyList(value) else { throw Invalid(description: "configuration is not a dict") }
        return entries
    }

    /// Typed JSON: `{"dict": {...}}`, `{"array": [...]}`, `{"string": ...}`, `{"integer": n}`, ...
    static func propertyList(_ value: Any) throws -> PropertyListValue {
        guard let object = value as? [String: Any], object.count == 1, let (type, inner) = object.first else {
            throw Invalid(description: "bad typed value \(value)")
        }
        switch type {
        case "dict":
            guard let entries = inner as? [String: Any] else { break }
            return .dictionary(try entries.mapValues { try propertyList($0) })
        case "array":
            guard let elements = inner as? [Any] else { break }
            return .array(try elements.map { try propertyList($0) })
        case "string":
            guard let text = inner as? String else { break }
            return .string(text)
        case "integer":
            return .integer(Int128(try int64(inner, "integer")))
        case "bool":
            guard let flag = inner as? Bool else { break }
            return .boolean(flag)
        case "real":
            guard let number = inner as? NSNumber else { break }
            return .real(number.doubleValue)
        case "data":
            return .data(try bytes(inner))
        default:
            break
        }
        throw Invalid(description: "bad typed value \(value)")
    }
}
