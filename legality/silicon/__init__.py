"""Probes on the GPU: latency chains per producer/consumer pair (`probe_chains`,
`latency_probe`) and barrier sweeps (`barrier_probe`). Above `timing`, which runs them."""
