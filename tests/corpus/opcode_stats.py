"""Verify the checked-in corpus cubins disassemble and count notable SASS opcodes.

For every ``cubin/<arch>/*.cubin`` this runs ``nvdisasm -json`` (and checks the
output parses as JSON) and ``nvdisasm -c -hex``, then counts instructions by
opcode in the text listing.  The counts in README.md were produced with it.

Usage::

    python tests/corpus/opcode_stats.py [--per-kernel]

``nvdisasm`` is taken from ``$NVDISASM`` if set, else from ``PATH``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

CUBIN_DIR: Path = Path(__file__).resolve().parent / "cubin"

# Opcode prefixes reported in the summary, matched against the full mnemonic at
# "." boundaries; each instruction counts once, in its longest matching bucket
# (so "HFMA2" excludes "HFMA2.MMA", "LDG.E.CONSTANT" excludes "LDG.E.128.CONSTANT").
NOTABLE: tuple[str, ...] = (
    "BRX",
    "CALL.REL",
    "RET",
    "SHFL",
    "ATOMG",
    "ATOMS",
    "RED",
    "REDG",
    "REDUX",
    "BAR",
    "LDS",
    "STS",
    "LDL",
    "STL",
    "DFMA",
    "DADD",
    "DMUL",
    "HFMA2",
    "HFMA2.MMA",
    "HADD2",
    "HMUL2",
    "HMNMX2",
    "MUFU",
    "LDG.E.128",
    "STG.E.128",
    "LDG.E.64",
    "LDG.E.CONSTANT",
    "BSSY",
    "BSYNC",
    "WARPSYNC",
    "VOTE",
    "VOTEU",
    "MATCH",
    "POPC",
    "FLO",
    "BREV",
    "MEMBAR",
    "CCTL",
    "ERRBAR",
    "IMAD.WIDE",
    "IMAD.HI",
    "I2F",
    "F2I",
    "EXIT",
)

_INSN_RE = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_.]*)")
_FUNC_RE = re.compile(r"^\s*\.type\s+(\S+),@function")
_ENTRY_RE = re.compile(r"^\s*\.other\s+(\S+),@\"STO_CUDA_ENTRY")


def nvdisasm_path() -> str:
    """Return the nvdisasm executable, or raise ``RuntimeError`` if missing."""
    path = os.environ.get("NVDISASM") or shutil.which("nvdisasm")
    if not path:
        raise RuntimeError("nvdisasm not found: set $NVDISASM or add it to PATH")
    return path


def disassemble(cubin: Path, nvdisasm: str) -> str:
    """Check ``-json`` output parses, then return the ``-c -hex`` text listing."""
    js = subprocess.run([nvdisasm, "-json", str(cubin)], capture_output=True, text=True, check=True)
    json.loads(js.stdout)
    txt = subprocess.run([nvdisasm, "-c", "-hex", str(cubin)], capture_output=True, text=True, check=True)
    return txt.stdout


def parse_listing(text: str) -> tuple[dict[str, Counter[str]], set[str]]:
    """Return (per-function opcode counters, set of entry kernel names)."""
    funcs: dict[str, Counter[str]] = {}
    entries: set[str] = set()
    current: Counter[str] | None = None
    for line in text.splitlines():
        if m := _FUNC_RE.match(line):
            current = funcs.setdefault(m.group(1), Counter())
        elif m := _ENTRY_RE.match(line):
            entries.add(m.group(1))
        elif (m := _INSN_RE.match(line)) and current is not None:
            current[m.group(1)] += 1
    return funcs, entries


def bucket(op: str) -> str | None:
    """Return the longest ``NOTABLE`` prefix matching ``op`` (exclusive buckets).

    E.g. ``HFMA2.MMA`` goes to the ``HFMA2.MMA`` bucket only, not ``HFMA2``.
    """
    best: str | None = None
    for prefix in NOTABLE:
        if (op == prefix or op.startswith(prefix + ".")) and (best is None or len(prefix) > len(best)):
            best = prefix
    return best


def notable_counts(ops: Counter[str]) -> dict[str, int]:
    """Aggregate full mnemonics into the exclusive ``NOTABLE`` buckets."""
    out: dict[str, int] = dict.fromkeys(NOTABLE, 0)
    for op, c in ops.items():
        if (b := bucket(op)) is not None:
            out[b] += c
    return out


def main(argv: list[str] | None = None) -> int:
    """Print per-arch kernel counts and notable opcode counts."""
    args = sys.argv[1:] if argv is None else argv
    per_kernel = "--per-kernel" in args
    nvdisasm = nvdisasm_path()
    for arch_dir in sorted(p for p in CUBIN_DIR.iterdir() if p.is_dir()):
        total: Counter[str] = Counter()
        kernels: list[str] = []
        for cubin in sorted(arch_dir.glob("*.cubin")):
            funcs, entries = parse_listing(disassemble(cubin, nvdisasm))
            kernels.extend(sorted(entries))
            for name, ops in sorted(funcs.items()):
                total.update(ops)
                if per_kernel:
                    kind = "kernel" if name in entries else "device-fn"
                    hits = {k: v for k, v in notable_counts(ops).items() if v}
                    print(
                        f"{arch_dir.name} {cubin.stem}:{name} ({kind}) " + " ".join(f"{k}={v}" for k, v in hits.items())
                    )
        print(f"== {arch_dir.name}: {len(kernels)} kernels, {sum(total.values())} instructions")
        for prefix, n in notable_counts(total).items():
            print(f"  {prefix:<16}{n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
