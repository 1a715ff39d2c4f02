import FuzzDriver

runFuzzer { data, size in fuzzNames(data, size) }
