/// What went wrong with the shared database, said so that an operator can act.
public enum DatabaseError: Error, Hashable, CustomStringConvertible {
    case invalidLocation(String)
    case password(String)
    /// Not reached in time, or the connection failed: logins and leases wait for it to return.
    case unavailable(String)
    /// The schema is newer than this server knows: an older server must not write to it.
    case schemaTooNew(found: Int, known: Int)
    /// A stored value this server cannot read (a hand-edited login, say).
    case malformed(String)
    /// The database refused a value as malformed (SQLSTATE class 22, a NUL byte say): what a client sent, not an outage.
    case invalidValue(String)
    /// The database refused the operation for another reason (a missing grant, say): the operator's to fix.
    case refused(String)

    public var description: String {
        switch self {
        case .invalidLocation(let reason): return "--database: \(reason)"
        case .password(let reason): return "the database password: \(reason)"
        case .unavailable(let reason): return "the database cannot be reached: \(reason)"
        case .schemaTooNew(let found, let known):
            return "the database's schema is at version \(found), this server knows up to \(known): upgrade this server before pointing it at that database"
        case .malformed(let reason): return "the database holds a value this server cannot read: \(reason)"
        case .invalidValue(let reason): return "the database refused a value as malformed: \(reason)"
        case .refused(let reason):
            return "the database refused the operation: \(reason) (see README, Several servers, for the grants the tunnel's role needs)"
        }
    }
}
