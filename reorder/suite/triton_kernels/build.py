"""Check in each family's kernel as Triton compiles it for sm_90, for machines without Triton.

For every family: the cubin, the PTX Triton handed its ptxas, and the launch spec built from
the metadata (reorder.triton.launch) at the family's tune shape, for the config named in
CONFIG_INDEX. The CPU tier tests reorder on these (verify against the original, the search
with the launch validated against the cubin, the ptxas stand-in on Triton's PTX) without
installing Triton; `sm_90/VERSION` names the Triton that made them.

    python -m reorder.suite.triton_kernels.build [OUT_DIR [FAMILY ...]]
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CONFIG_INDEX = 0


def build(out: Path = HERE / "sm_90", names: set[str] | None = None) -> list[Path]:
    """Write the files of every family (of those in `names`, when given)."""
    import triton

    from reorder.suite.triton_kernels import FAMILIES, stand_in_args
    from reorder.triton.compile import compile_call
    from reorder.triton.launch import launch_spec, spec_toml

    out.mkdir(parents=True, exist_ok=True)
    written = []
    for family in FAMILIES:
        if names is not None and family.name not in names:
            continue
        case = family.case(family.tune_shape)
        call = compile_call(
            case.kernel, *stand_in_args(case), arch=90, **case.constexprs, **family.configs[CONFIG_INDEX]
        )
        spec = launch_spec(call.kernel, call.values, case.grid, outputs=case.outputs, inits=case.inits)
        for suffix, data in (
            (".cubin", call.cubin),
            (".ptx", call.kernel.asm["ptx"].encode()),
            (".toml", spec_toml(spec).encode()),
        ):
            path = out / f"{family.name}{suffix}"
            path.write_bytes(data)
            written.append(path)
    (out / "VERSION").write_text(f"triton {triton.__version__}; config index {CONFIG_INDEX} of each family\n")
    return written


if __name__ == "__main__":
    for path in build(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "sm_90", set(sys.argv[2:]) or None):
        print(path)
