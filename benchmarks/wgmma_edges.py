"""The wgmma move's edge trip counts, checked on the GPU with `reorder check`.

    python -m benchmarks.wgmma_edges --build gpu_build/triton --out OUT [--sets 3] [--jobs 4]

reorder.ptx.moves.wgmma moves the feed-forward's exit wait onto the loop's way out and lowers the
loop's register waits. The benchmark's shapes run the K loop 8 to 64 times; the paths the
move changes most are the short ones: the loop skipped (K = 0: the path that now has no
wait at all), run once (K = 64: the exit right after the first iteration, with the fewest
groups committed) and a few times (K = 128, 192). For every config of the build's
`ffn_swiglu_fp16` family and every wgmma candidate of it, each K is a launch of the
config's 512 x 512 spec with K (only) changed: Triton specializes an int on == 1 and on
divisibility by 16, so every such K runs the same cubin. Each check: `reorder check
ORIGINAL CANDIDATE --launch SPEC --sets N` (fresh inputs per set, shared memory poisoned).
Rows go to OUT/wgmma_edges.csv (config, candidate, K, exit code, the check's last line).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from reorder.suite.rows import write_rows

FAMILY = "ffn_swiglu_fp16"
BASE_SHAPE = "512x512x512"
EDGE_KS = (0, 64, 128, 192)


def edge_spec(spec: dict, k: int) -> dict:
    """The spec with the K parameter set to `k` (buffers and strides kept: K only bounds the loop)."""
    params = [dict(p, value=k) if p["name"] == "K" else p for p in spec["param"]]
    return {**spec, "param": params}


def checks(build: Path, out: Path) -> list[dict]:
    """Every (config, wgmma candidate, K) to check, with its spec written under `out`."""
    manifest = json.loads((build / "manifest.json").read_text())
    family = next(f for f in manifest["families"] if f["name"] == FAMILY)
    todo = []
    for config in family["configs"]:
        folder = build / config["folder"]
        for row in config.get("candidates", []):
            if not (row["name"].startswith("ptx-wgmma") and row["status"] == "ok"):
                continue
            for k in EDGE_KS:
                spec = out / "specs" / f"{config['label']}.K{k}.json"
                spec.parent.mkdir(parents=True, exist_ok=True)
                spec.write_text(json.dumps(edge_spec(config["specs"][BASE_SHAPE], k)))
                todo.append(
                    {
                        "config": config["label"],
                        "candidate": row["name"],
                        "K": k,
                        "original": str(folder / config["original"]),
                        "cubin": str(folder / row["cubin"]),
                        "spec": str(spec),
                    }
                )
    return todo


def run_check(item: dict, sets: int) -> dict:
    cmd = [sys.executable, "-m", "reorder", "check", item["original"], item["cubin"]]
    cmd += ["--launch", item["spec"], "--sets", str(sets), "--timeout", "60"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    said = (done.stdout + done.stderr).strip().splitlines()
    return {
        "config": item["config"],
        "candidate": item["candidate"],
        "K": item["K"],
        "rc": done.returncode,
        "line": said[-1] if said else "",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--sets", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=4)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    todo = checks(args.build, args.out)
    with ThreadPoolExecutor(args.jobs) as pool:
        rows = list(pool.map(lambda item: run_check(item, args.sets), todo))
    write_rows(args.out / "wgmma_edges.csv", rows)
    bad = [r for r in rows if r["rc"] != 0]
    print(f"{len(rows) - len(bad)} of {len(rows)} edge checks identical", flush=True)
    for r in bad:
        print(f"  {r['config']} {r['candidate']} K={r['K']}: rc {r['rc']}: {r['line']}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
