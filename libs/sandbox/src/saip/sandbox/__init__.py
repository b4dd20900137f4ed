"""saip sandbox: authored JavaScript run in V8, one single-use isolate per call, on a pool of worker processes."""
