extension LoginAccessRefusal {
    /// What the client is told beside result 3 (PROTOCOL.md B2), so it says why rather than "wrong password".
    var wireDetail: TunnelLoginRefusalDetail {
        switch self {
        case .expired: return .expired
        case .disabled: return .disabled
        }
    }
}
