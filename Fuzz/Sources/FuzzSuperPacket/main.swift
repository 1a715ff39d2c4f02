import FuzzDriver

runFuzzer { data, size in fuzzSuperPacket(data, size) }
