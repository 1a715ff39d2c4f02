print("wire benchmark: not written yet")
