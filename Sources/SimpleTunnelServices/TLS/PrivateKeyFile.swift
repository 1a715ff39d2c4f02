/// A private key file is refused when its permissions let anyone but its
/// owner in (`PrivateFile`): other users of the machine could read it and
/// impersonate the server (or client).
enum PrivateKeyFile {
    /// Throws when `path` has any group or other permission bits. A file that
    /// cannot be examined is left to the read that follows, which says why.
    static func checkPermissions(_ path: String) throws(TLSError) {
        if let exposure = PrivateFile.exposure(of: path, what: "UNPROTECTED PRIVATE KEY FILE") {
            throw .invalidConfiguration(exposure)
        }
    }
}
