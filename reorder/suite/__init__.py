"""The kernel suite `reorder bench` runs, installed with reorder so the command needs no
checkout: `suite.toml` (each kernel's cubin, launch spec and search budget), the cubins and
specs it names (`cubin/`, `specs/`, `structs/`), the sweep rules of a spec's [grid_sweep]
table (`sweep`), and `reorder bench --triton`'s steps against Triton's own tuning
(`triton_build` on the CPU, `triton_gpu` on the GPU, `triton_report`, over the families of
`triton_kernels`). The sources the cubins are built from, and the studies run on them, are
the checkout's benchmarks/."""

from pathlib import Path

SUITE_FILE = Path(__file__).resolve().parent / "suite.toml"
