import FuzzDriver

runFuzzer { data, size in fuzzAuthenticationGate(data, size) }
