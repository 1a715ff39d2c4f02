import FuzzDriver

runFuzzer { data, size in fuzzXMLPropertyList(data, size) }
