"""Where a measurement came from: the commit measured and the GPU it ran on.

A GPU run works on a copy of the tree without its git history (`git archive` of the
commit plus a COMMIT file naming it), so the commit is git's HEAD where git knows the
tree, else that file. Git comes first so that a COMMIT file left in a developer's tree
never stamps a result with a stale commit. A GPU machine can hold a stale git snapshot
under a newer tree (a latency probe of 2026-11-29 was stamped with the first commit
of that day), so a run script names the commit it ships in REORDER_COMMIT, which wins.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def commit(length: int = 7) -> str:
    """The abbreviated commit of this tree ("unknown" when neither git nor COMMIT says)."""
    named = os.environ.get("REORDER_COMMIT", "").strip()
    if named:
        return named
    try:
        done = subprocess.run(
            ["git", "rev-parse", f"--short={length}", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        done = None
    if done is not None and done.returncode == 0 and done.stdout.strip():
        return done.stdout.strip()
    stamp = ROOT / "COMMIT"
    return (stamp.read_text().strip() if stamp.exists() else "") or "unknown"


def gpu_name(cp: Any = None) -> str:
    """The name of the current CUDA device (CuPy's, imported here unless given)."""
    if cp is None:
        import cupy

        cp = cupy
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    name = props.get("name", b"unknown GPU")
    return name.decode(errors="replace") if isinstance(name, bytes) else str(name)
