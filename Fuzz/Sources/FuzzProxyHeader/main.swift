import FuzzDriver

runFuzzer { data, size in fuzzProxyHeader(data, size) }
