import PostgresNIO

extension DatabaseError {
    /// Sorts a failure by whose it is, from its SQLSTATE class: a malformed
    /// value (class 22) is the client's, a refused connection, authentication
    /// or shutdown (08, 28, 53, 57, 58) and any failure below SQL are an
    /// outage, anything else the database refused is the operator's.
    static func classifying(_ error: any Error) -> DatabaseError {
        switch error {
        case let error as DatabaseError:
            return error
        case let error as PostgresTransactionError:
            // What failed first: BEGIN, then the body (a query, or a decision of ours), then COMMIT.
            guard let cause = error.beginError ?? error.closureError ?? error.commitError else { return .unavailable("the transaction failed") }
            return classifying(cause)
        case let error as PSQLError where error.code == .server:
            let state = error.serverInfo?[.sqlState] ?? "?????"
            let said = "\(error.serverInfo?[.message] ?? "an error") (SQLSTATE \(state))"
            switch state.prefix(2) {
            case "22": return .invalidValue(said)
            case "08", "28", "53", "57", "58": return .unavailable(said)
            default: return .refused(said)
            }
        case let error as PSQLError:
            return .unavailable("\(error.code)" + (error.underlying.map { ": \($0)" } ?? ""))
        case let error as PostgresDecodingError:
            return .malformed("column \(error.columnName): \(error.code)")
        default:
            return .unavailable(String(describing: error))
        }
    }
}
