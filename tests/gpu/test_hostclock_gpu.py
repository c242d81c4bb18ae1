"""On the GPU: the host-clock bound contains what the host saw.

The flag kernel reads its cycle counter, then sets a flag in mapped host memory; the host
reads its clock when it sees the flag. That read's host interval (link 1 from the kernel's
own checkpoints, link 2 from sync windows before and after) must end before the host saw the
flag; the read made after the kernel saw the host's release must end after the release.
Then `reorder probe --stamps ... --host-clock` end to end on the RMSNorm kernel.
"""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

pytestmark = pytest.mark.gpu

from reorder.binary.tools import have_tool  # noqa: E402
from reorder.probe.hostaxis import flag_check, host_axis, needed_slack  # noqa: E402
from reorder.probe.hostclock import Session  # noqa: E402
from reorder.suite.sweep import apply_sweep, spec_toml  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
CUBIN = ROOT / "benchmarks" / "kernels" / "cubin" / "rmsnorm.cubin"
SPEC = ROOT / "benchmarks" / "kernels" / "specs" / "rmsnorm_triton_style.toml"


def test_the_bound_contains_what_the_host_saw() -> None:
    with Session() as session:
        session.flag_test()  # warm-up
        before = session.sync_window(0, 300)
        tests = [session.flag_test() for _ in range(8)]
        after = session.sync_window(1, 300)
        gpu = session.gpu
    axis = host_axis(gpu, [before, after])
    tick = max(before.tick_ns(), after.tick_ns())
    slack = max(needed_slack(t.checkpoints, tick, bits=64) for t in tests)  # link 1's e, measured
    for t in tests:
        check = flag_check(t, axis, tick, slack)
        assert check.release[0] <= check.release[1] and check.flag[0] <= check.flag[1]
        assert check.release[1] >= check.host_release  # the read after the release ends after it
        assert check.ends_before_seen, (check.flag, check.host_seen)  # ends before the host saw the flag


def test_probe_host_clock_end_to_end(tmp_path) -> None:
    if not have_tool("ptxas"):
        pytest.skip("no ptxas for the probe templates")
    raw = dict(apply_sweep(tomllib.loads(SPEC.read_text()), {"rows": 16}))
    raw.pop("grid_sweep", None)
    spec = tmp_path / "rms16.toml"
    spec.write_text(spec_toml(raw))
    out = tmp_path / "events.csv"
    command = ["probe", str(CUBIN), "--launch", str(spec), "--stamps", "bb0,1080", "--host-clock", "--launches", "3"]
    done = subprocess.run(
        [sys.executable, "-m", "reorder", *command, "-o", str(out)],
        check=False,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr
    events = list(csv.DictReader(out.open()))
    assert len(events) == 3 * 16 * 3  # 3 launches, 16 blocks' warp 0, the entry stamp and two more
    for e in events:
        assert int(e["gpu_lo_ns"]) <= int(e["gpu_hi_ns"]) and int(e["host_lo_ns"]) <= int(e["host_hi_ns"])
    launches = list(csv.DictReader(out.with_name("events.launches.csv").open()))
    for row in launches:
        assert int(row["latency_hi_ns"]) > 0  # a warp cannot start before its launch call did
        assert int(row["first_entry_lo_ns"]) <= int(row["first_entry_hi_ns"])
    assert out.with_name("events.png").read_bytes()[:4] == b"\x89PNG"
