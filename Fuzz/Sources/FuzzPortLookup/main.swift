import FuzzDriver

runFuzzer { data, size in fuzzPortLookup(data, size) }
