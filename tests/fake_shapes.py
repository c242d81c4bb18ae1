"""A worker pool that answers the byte-check and timing jobs without a GPU, for the multi-shape
paths: every candidate is identical, and its ratio at a launch is a fixed function of its bytes
and the launch's grid, so different candidates win at different shapes (or, with
`same_everywhere`, the same one at all). Jobs are recorded for the tests to count."""

from __future__ import annotations

import hashlib
from pathlib import Path
from types import SimpleNamespace


def fake_ratio(candidate: bytes, original: bytes, grid, same_everywhere: bool = False) -> float:
    """1.0 for the original's bytes; else 0.80..1.10, fixed by the bytes (and the grid)."""
    if candidate == original:
        return 1.0
    salt = b"" if same_everywhere else repr(tuple(grid)).encode()
    u = int.from_bytes(hashlib.sha256(candidate + salt).digest()[:4], "little") / 2**32
    return 0.80 + 0.30 * u


class FakeShapePool:
    """Answers timing.evaluate's check_job and time_job the way the worker would return them."""

    def __init__(self, devices=None, same_everywhere: bool = False, ci: float = 0.003, mismatch: bytes = b"") -> None:
        self.same_everywhere, self.ci, self.mismatch = same_everywhere, ci, mismatch
        self.jobs: list = []

    def __enter__(self) -> FakeShapePool:
        return self

    def __exit__(self, *exc) -> None:
        return None

    def run(self, job):
        self.jobs.append(job)
        a, b, spec = job.args[:3]
        kwargs = dict(job.kwargs)
        if job.func.endswith(":check_job"):
            bad = self.mismatch and self.mismatch in Path(b).read_bytes()
            launches = 1 + len(kwargs.get("more", ()))
            value = {
                "check": "MISMATCH" if bad else "identical",
                "check_sets": kwargs.get("sets", 3),
                "check_detail": f"identical on {kwargs.get('sets', 3)} sets at {launches} launches (fake)"
                if not bad
                else "out[3]: 1.0 != 2.0 (fake)",
                "check_launch_s": [0.01] * launches,
                "check_references": 0,
            }
            return SimpleNamespace(status="ok", reason="", value=value, ok=True)
        if job.func.endswith(":time_job"):
            r = fake_ratio(Path(b).read_bytes(), Path(a).read_bytes(), spec.grid, self.same_everywhere)
            value = {"ratio": r, "ci_low": r * (1 - self.ci), "ci_high": r * (1 + self.ci), "a_us": 10.0}
            value |= {"b_us": 10.0 * r, "rounds": 40, "clock_mhz": 1980.0, "verdict": "faster" if r < 1 else "slower"}
            return SimpleNamespace(status="ok", reason="", value=value, ok=True)
        raise AssertionError(f"unexpected job {job.func}")

    def count(self, name: str) -> int:
        return sum(j.func.endswith(f":{name}") for j in self.jobs)
