extension AccessRules {
    /// `Server.Users` entries no password in the users file matches: a typo
    /// of a login, or one that comes with a certificate. Warned of at start
    /// and at a reload, never refused. `users` nil: the server takes no logins.
    func loginsWithoutPassword(in users: UserDatabase?) -> [String] {
        guard !self.users.isEmpty else { return [] }
        guard let users else {
            return ["Server.Users names \(self.users.count) logins, but the server takes no logins (no --users or --database): their entries apply to no one"]
        }
        return self.users.keys.sorted().filter { users.users[$0] == nil }.map { login in
            "Server.Users.\(login): the users file has no password for \(PeerText.quoted(login)); "
                + "its entry applies only once the login is added (tunnel-server passwd \(login))"
        }
    }
}
