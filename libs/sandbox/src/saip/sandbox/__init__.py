"""saip sandbox: authored JavaScript run in QuickJS, one single-use isolate (a runtime of its own) per call, on a pool
of worker processes."""
