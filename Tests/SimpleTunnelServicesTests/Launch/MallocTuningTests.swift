import Testing
@testable import SimpleTunnelServices

@Suite("Malloc tuning")
struct MallocTuningTests {
    @Test func appliesUnlessTheUserTunesMallocThemselves() {
        #expect(MallocTuning.applies(glibcTunables: nil))
        #expect(MallocTuning.applies(glibcTunables: "glibc.pthread.rseq=0"))
        #expect(!MallocTuning.applies(glibcTunables: "glibc.malloc.trim_threshold=131072"))
        #expect(!MallocTuning.applies(glibcTunables: "glibc.pthread.rseq=0:glibc.malloc.arena_max=2"))
    }
}
