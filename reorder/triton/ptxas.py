"""`reorder-ptxas`: a ptxas stand-in for Triton without the stages hook (before 3.6, or by choice).

Point Triton at it (`TRITON_PTXAS_PATH=$(which reorder-ptxas)`, or for sm >= 100 in 3.6-3.8
and sm >= 90 in 3.9 `TRITON_PTXAS_BLACKWELL_PATH`; `triton.knobs.nvidia.ptxas` from 3.4).
Triton calls it as `ptxas [-lineinfo] -v [--regAllocOptLevel=2] [ptx_options]
--gpu-name=sm_90a X.ptx -o X.ptx.o` and needs exit 0 and the cubin at `-o`. The stand-in

1. strips a reorder marker from the arguments (reorder.triton.request) and runs the real
   ptxas with the rest, unchanged: its output, messages and exit code are Triton's to see;
2. if ptxas succeeded, rewrites the cubin at `-o` (reorder.triton.rewrite, given the input
   PTX and the real ptxas with the same arguments, so that `moves` takes the `wgmma` PTX step
   first) and writes it back atomically; on any failure the real ptxas' cubin stays and one
   line says why.

Which configs are rewritten: `REORDER_PTXAS=all` (the default) every one, with the marker's
request or else `moves`; `marked` only those carrying a marker (reorder as an autotune axis);
`off` none (a pass-through, for comparisons).

`--version` prints a line naming reorder (its source digest and mode), then the real
ptxas' own lines: Triton reads `release X.Y` from them to choose the PTX version, and hashes
the whole text into its cache key, so switching the stand-in or reorder's code on or off
never serves a cached cubin made the other way.

The real ptxas is `REORDER_REAL_PTXAS` when set, else the one this Triton would use itself
(its bundled `ptxas-blackwell` from sm_90 on in 3.9+, from sm_100 on before, else `ptxas`),
else the CUDA toolkit's.
"""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from reorder.base.errors import InputError, ReorderError
from reorder.triton.request import Request, split_tokens

MODES = ("all", "marked", "off")
_GPU_NAME = re.compile(r"^--gpu-name=sm_(\d+)[af]?$")


def _say(line: str) -> None:
    print(f"reorder-ptxas: {line}", file=sys.stderr, flush=True)


def mode() -> str:
    value = os.environ.get("REORDER_PTXAS", "all").strip() or "all"
    if value not in MODES:
        raise InputError(f"REORDER_PTXAS={value!r}: expected one of {', '.join(MODES)}")
    return value


def real_ptxas(sm: int = 90) -> Path:
    """The ptxas this stand-in runs (see the module docstring); never the stand-in itself."""
    from reorder.binary.tools import find_tool, triton_ptxas_recipe

    named = os.environ.get("REORDER_REAL_PTXAS")
    if named:
        path = Path(named)
    else:
        bundled, _ = triton_ptxas_recipe(sm)
        path = bundled if bundled.is_file() else find_tool("ptxas")
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise InputError(f"real ptxas {path} is not an executable file (set REORDER_REAL_PTXAS)")
    if path.resolve() == Path(sys.argv[0]).resolve():
        raise InputError(f"REORDER_REAL_PTXAS names this stand-in ({path}): it must name NVIDIA's ptxas")
    return path


def target_sm(argv: Sequence[str]) -> int:
    """The SM number of `--gpu-name=sm_NN[a]` (90 when absent)."""
    for arg in argv:
        match = _GPU_NAME.match(arg)
        if match:
            return int(match.group(1))
    return 90


def output_path(argv: Sequence[str]) -> Path | None:
    """The file after `-o` (or `--output-file`), None when absent."""
    for flag, value in itertools.pairwise(argv):
        if flag in ("-o", "--output-file"):
            return Path(value)
    for arg in argv:
        if arg.startswith("--output-file="):
            return Path(arg.split("=", 1)[1])
    return None


def version_text(real: Path) -> str:
    """What `--version` prints: reorder's line first, then the real ptxas' (with `release X.Y`)."""
    from reorder.triton.digest import code_digest

    done = subprocess.run([str(real), "--version"], capture_output=True, text=True, check=False, timeout=60)
    return f"reorder-ptxas {code_digest()} (mode {mode()}): reorder's moves after NVIDIA ptxas\n{done.stdout}"


def chosen(request: Request | None, how: str) -> Request | None:
    """The request to carry out, or None to leave ptxas' cubin alone."""
    if how == "off" or (how == "marked" and request is None):
        return None
    return request or Request()


def rewrite_output(path: Path, request: Request, real: Path, argv: Sequence[str]) -> None:
    """Replace ptxas' cubin at `path` by reorder's binary (atomically); kept on any failure.
    The input PTX and the real ptxas with the same arguments let a `moves` request take the
    wgmma PTX step first (reorder.triton.rewrite.rewrite_or_keep)."""
    from reorder.base.files import write_atomic
    from reorder.triton.rewrite import rewrite_or_keep

    cubin = path.read_bytes()
    ptx = ptx_input(argv)
    result = rewrite_or_keep(
        cubin,
        request,
        say=_say,
        ptx=ptx.read_text() if ptx is not None else None,
        compile_cubin=(lambda text: compile_moved(real, argv, ptx, path, text)) if ptx is not None else None,
    )
    if result.data != cubin:
        write_atomic(path, result.data)


def ptx_input(argv: Sequence[str]) -> Path | None:
    """The PTX file ptxas is given (the argument ending in `.ptx`), None when absent."""
    for arg in argv:
        if arg.endswith(".ptx") and not arg.startswith("-") and Path(arg).is_file():
            return Path(arg)
    return None


def _swapped(arg: str, ptx: Path, moved: Path, out: Path, cubin: Path) -> str:
    """One ptxas argument with the input PTX and the output cubin replaced by scratch files
    (compared as paths: `./k.ptx` and `k.ptx` are one file)."""
    if arg.startswith("--output-file="):
        return f"--output-file={cubin}" if Path(arg.split("=", 1)[1]) == out else arg
    if arg.startswith("-"):
        return arg
    return str(moved) if Path(arg) == ptx else str(cubin) if Path(arg) == out else arg


def compile_moved(real: Path, argv: Sequence[str], ptx: Path, out: Path, text: str) -> bytes:
    """`text` (the moved PTX) compiled by the real ptxas with the same arguments, input and
    output swapped for scratch files."""
    with tempfile.TemporaryDirectory(prefix="reorder-ptxas-") as tmp:
        moved, cubin = Path(tmp) / ptx.name, Path(tmp) / "moved.cubin"
        moved.write_text(text)
        args = [_swapped(a, ptx, moved, out, cubin) for a in argv]
        done = subprocess.run([str(real), *args], capture_output=True, text=True, check=False, timeout=600)
        if done.returncode != 0:
            raise ReorderError(f"ptxas refused the moved PTX: {done.stderr.strip()[:200]}")
        return cubin.read_bytes()


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        request, rest = split_tokens(argv)
        how = mode()
        real = real_ptxas(target_sm(rest))
    except ReorderError as exc:
        _say(f"error: {exc}")
        return 2
    if "--version" in rest or "-V" in rest:
        sys.stdout.write(version_text(real))
        sys.stdout.flush()
        return 0
    done = subprocess.run([str(real), *rest], check=False)  # ptxas' own output goes straight through
    if done.returncode != 0:
        return done.returncode
    wanted = chosen(request, how)
    out = output_path(rest)
    if wanted is not None and out is not None and out.is_file():
        try:
            rewrite_output(out, wanted, real, rest)
        except Exception as exc:  # noqa: BLE001 - ptxas' cubin is already there and must stay usable
            _say(f"the real ptxas' cubin is kept ({type(exc).__name__}: {exc})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
