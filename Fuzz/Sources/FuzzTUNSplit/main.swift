import FuzzDriver

runFuzzer { data, size in fuzzTUNSplit(data, size) }
