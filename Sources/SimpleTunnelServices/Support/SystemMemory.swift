#if canImport(Glibc)
import Glibc
#endif

/// Facts about the machine's memory, for budgets that must hold on a small one.
enum SystemMemory {
    /// Physical memory in bytes (4 GiB when the system does not say).
    static var physicalBytes: UInt64 {
        let pages = sysconf(Int32(_SC_PHYS_PAGES))
        let pageSize = sysconf(Int32(_SC_PAGESIZE))
        guard pages > 0, pageSize > 0 else { return 4 << 30 }
        return UInt64(pages) * UInt64(pageSize)
    }
}
