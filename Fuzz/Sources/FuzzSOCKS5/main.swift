import FuzzDriver

runFuzzer { data, size in fuzzSOCKS5(data, size) }
