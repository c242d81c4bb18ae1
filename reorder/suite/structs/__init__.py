"""The struct-parameter kernels of the suite (their sources and builders: benchmarks/kernels/structs)."""
