"""Checking and timing of candidate cubins against the original, on a GPU, in isolated workers.

Modules (none imports cupy at import time, so this package loads on CPU-only machines):
spec (launch specs from TOML), inputs (reproducible input sets), stats (paired
bootstrap ratio), check (byte-exact comparison, check_pair), paired (time_pair),
gpu (the cupy layer), worker (process isolation, WorkerPool).
"""
