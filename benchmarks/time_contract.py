"""Does `optimize --time T` end by T + grace on a big kernel, and a SIGTERM within 2 s?

    python -m benchmarks.time_contract --out FOLDER [--time 40] [--loads 10000]

On the CPU: the generated unrolled kernel of tests/big_kernel.py (10,000 loads: 20,040 SASS
instructions) through `optimize --device cpu --time T`, then a run on the bundled
rms_norm_f32 signalled 5 s into its search. Writes time_contract.json: wall and CPU
seconds, the machine's load, the last line and the phase note of the report.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def big_run(folder: Path, limit_s: float, loads: int) -> dict:
    sys.path.insert(0, str(ROOT / "tests"))
    from big_kernel import build

    cubin = build(folder / "kernel", loads)
    out = folder / "out.cubin"
    command = [sys.executable, "-m", "reorder", "optimize", str(cubin), "-o", str(out), "--device", "cpu"]
    command += ["--time", f"{limit_s:g}s", "--budget", "3"]
    before = os.times()
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=ROOT)
    wall = time.monotonic() - started
    after = os.times()
    report = folder / "out.reorder" / "report.md"
    notes = report.read_text().splitlines() if report.is_file() else []
    return {
        "case": f"generated kernel, {loads} loads, optimize --device cpu --time {limit_s:g}s --budget 3",
        "exit_code": done.returncode,
        "wall_s": round(wall, 2),
        "cpu_s": round(after.children_user + after.children_system - before.children_user - before.children_system, 2),
        "load_1min": os.getloadavg()[0],
        "written": out.is_file(),
        "last_line": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "",
        "phases": next((n for n in notes if "phases of --time" in n), ""),
        "size_line": next((line for line in done.stderr.splitlines() if "instructions)" in line), ""),
    }


def sigterm_run(folder: Path) -> dict:
    cubin = ROOT / "benchmarks" / "kernels" / "cubin" / "rmsnorm.cubin"
    command = [sys.executable, "-m", "reorder", "optimize", str(cubin), "--kernel", "rms_norm_f32"]
    command += ["-o", str(folder / "sig.cubin"), "--device", "cpu", "--budget", "500", "--time", "10m"]
    command += ["--assume-noalias"]
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    assert proc.stderr is not None
    for line in proc.stderr:
        lines.append(line.rstrip())
        if line.startswith("search: ["):
            break
    time.sleep(5)
    proc.send_signal(signal.SIGTERM)
    sent = time.monotonic()
    rest = proc.stderr.read()
    proc.wait()
    return {
        "case": "rms_norm_f32, optimize --device cpu, SIGTERM 5 s into the search",
        "exit_code": proc.returncode,
        "signal_to_exit_s": round(time.monotonic() - sent, 2),
        "load_1min": os.getloadavg()[0],
        "last_line": rest.strip().splitlines()[-1] if rest.strip() else "",
        "written": (folder / "sig.cubin").exists(),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--time", type=float, default=40.0)
    parser.add_argument("--loads", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="time-contract-") as tmp:
        rows = [big_run(Path(tmp) / "big", args.time, args.loads), sigterm_run(Path(tmp))]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "time_contract.json").write_text(json.dumps(rows, indent=2) + "\n")
    print(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
