import FuzzDriver

runFuzzer { data, size in fuzzFrameDecoder(data, size) }
