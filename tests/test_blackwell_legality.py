"""Blackwell's tables and what rests on them: every fact says its source and none claims silicon,
compiler output is legal as compiled, moves verify against their originals, optimize without a GPU
writes nothing unless told, and the latency probe builds its sweeps for sm_100a and sm_120 here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from sweeps import sample  # tests/sweeps.py

from legality.evidence import source_of, unmeasured_facts, verify_as_compiled
from legality.latency import TABLE_DIR, load_table, read_table, unmeasured_arch
from legality.verify import verify_kernel
from reorder.build.pipeline import batch_loads, cut_stalls
from reorder.sass.control import CONTROL_MASK, CONTROL_SHIFT

ROOT = Path(__file__).resolve().parent.parent
BLACKWELL = (100, 103, 120)
CLI = [sys.executable, "-m", "reorder"]


def _run(*args: str, env: dict | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, timeout=600, env=env or dict(os.environ), cwd=cwd, check=False
    )


@pytest.mark.parametrize("arch", BLACKWELL)
def test_every_fact_of_the_tables_says_its_source_and_none_claims_silicon(arch):
    reference = read_table(TABLE_DIR / f"sm_{arch}.toml")
    rows = reference["entry"] + reference["default"]
    assert len(rows) > 60
    assert all(r["provenance"].startswith(f"unmeasured on sm_{arch} silicon: sm_90's") for r in rows)
    observed = read_table(TABLE_DIR / f"ptxas_sm_{arch}.toml")
    assert len(observed["pair"]) > 200
    assert all(r["provenance"].startswith("ptxas-observed") for r in observed["entry"] + observed["pair"])
    assert (TABLE_DIR / f"issue_sm_{arch}.toml").read_text().count("[[op]]") >= 3
    table = load_table(arch)
    sources = {source_of(e) for e in [*table.entries.values(), *table.defaults.values(), *table.pairs.values()]}
    assert sources <= {"unmeasured", "ptxas-observed", "default"}, sources
    assert unmeasured_arch(arch) and not unmeasured_arch(90)
    hopper = load_table(90)
    for key, entry in table.entries.items():  # carried, never below Hopper's value
        if key in hopper.entries and source_of(entry) == "unmeasured":
            assert entry.cycles >= hopper.entries[key].cycles, key


def test_a_measured_table_in_reorder_tables_replaces_the_carried_facts(tmp_path):
    """What `reorder latency-probe --out DIR` writes is what legality loads with REORDER_TABLES=DIR."""
    from legality.silicon import barrier_probe as bp
    from legality.silicon.latency_probe import PairResult, to_toml

    row = PairResult("FFMA", "measured", "FFMA", "FFMA", "FMAI", "FMAI", "raw", ptxas_stall=4, floor=4, input_sets=8)
    (tmp_path / "measured_sm_100.toml").write_text(to_toml([row], 100, "NVIDIA B200", commit="abc"))
    sweep = [
        {"kernel": "bar_sync_lds", "side": "after", "cycles": c, "check": "identical", "status": "ok"} for c in (4, 5)
    ]
    (tmp_path / "barriers_sm_100.toml").write_text(bp.to_toml(sweep, 100, "NVIDIA B200", commit="abc"))
    probe = textwrap.dedent(
        """
        from legality.latency import load_table, unmeasured_arch
        from legality.barriers import load_rules
        e = load_table(100).lookup("FMAI", "FMAI", "raw")
        bar = load_rules(100).distance_for("BAR.SYNC.DEFER_BLOCKING")
        print(e.cycles, e.provenance.split(",")[0], unmeasured_arch(100), bar.cycles)
        """
    )
    env = dict(os.environ, REORDER_TABLES=str(tmp_path), PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    assert done.stdout.split() == ["4", "measured", "on", "NVIDIA", "B200", "False", "4"], done.stderr
    from legality.barriers import load_rules

    assert load_rules(100).distance_for("BAR.SYNC.DEFER_BLOCKING") is None  # unmeasured: neighbours kept


def test_compiler_output_is_legal_as_compiled(blackwell_corpus):
    counted = set()
    for cubin, code in blackwell_corpus:
        report = verify_as_compiled(code)
        assert report.ok, (cubin.path, code.kernel.name, report.violations[:2])
        counted |= {source for source, _ in report.sources}
    assert "unmeasured" in counted and "silicon" not in counted


def _without_control(ins) -> int:
    return ins.word & ~(CONTROL_MASK << CONTROL_SHIFT)


@pytest.mark.slow
def test_stall_cuts_and_load_batches_verify_against_their_originals(blackwell_corpus):
    """Every entry kernel of both archs (the CPU tier: every fourth one, tests/sweeps.py)."""
    removed = total = batched = 0
    entries = sample([(cubin, code) for cubin, code in blackwell_corpus if code.kernel.is_entry])
    assert {cubin.arch for cubin, _ in entries} == {100, 120}
    for i, (cubin, code) in enumerate(entries):
        cut = cut_stalls(code)
        assert verify_kernel(cut.after, original=code.instructions).ok, (cubin.path, code.kernel.name)
        assert list(map(_without_control, cut.after.instructions)) == list(map(_without_control, code.instructions))
        removed += sum(x.ctrl.stall for x in code.instructions) - sum(x.ctrl.stall for x in cut.after.instructions)
        total += sum(x.ctrl.stall for x in code.instructions)
        if i % 2 == 0:
            out = batch_loads(code, noalias=True)
            assert verify_kernel(out.after, original=code.instructions).ok, (cubin.path, code.kernel.name)
            batched += bool(out.applied)
    assert removed > 0.02 * total, (removed, total)
    assert batched >= 5, batched


def test_unmeasured_facts_are_listed_for_a_cut(blackwell_corpus):
    code = next(k for c, k in blackwell_corpus if c.arch == 100 and k.kernel.name == "saxpy_grid_stride")
    cut = cut_stalls(code)
    facts = unmeasured_facts(cut.after, cut.after.instructions, original=code.instructions)
    assert facts and all("(silicon)" not in f for f in facts)
    assert any("(unmeasured): unmeasured on sm_100 silicon" in f for f in facts)


def test_optimize_without_a_gpu_writes_nothing_unless_told(blackwell_corpus_dir, tmp_path):
    cubin = blackwell_corpus_dir / "sm_100a" / "elementwise.cubin"
    out = tmp_path / "out" / "fast.cubin"
    out.parent.mkdir()
    base = ["optimize", str(cubin), "--kernel", "saxpy_grid_stride", "-o", str(out), "--device", "cpu"]
    base += ["--budget", "3", "--time", "30s", "--no-contributions", "--jobs", "1"]
    done = _run(*base)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert f"error: {cubin}: sm_100: no latency fact" in line and "--unmeasured-arch" in line
    assert not list(out.parent.iterdir())  # nothing written
    done = _run(*base, "--unmeasured-arch")
    assert done.returncode == 0, done.stderr[-2000:]
    report = (tmp_path / "out" / "fast.reorder" / "report.md").read_text()
    assert out.is_file() and "## Facts never measured on sm_100 silicon" in report
    assert "unmeasured on sm_100 silicon" in report


@pytest.mark.slow
def test_latency_probe_builds_its_sweeps_for_sm_100a(tmp_path):
    """`reorder latency-probe --arch sm_100a --build-only` here: every pair located or reported, the
    variants and the canary written, ready for `--from DIR` on the GPU."""
    from legality.silicon import probe_chains as pc
    from reorder.binary.cubin import read_cubin
    from reorder.sass.model import decode_kernel

    named = ["FFMA", "DFMA", "ISETP->branch", "FSETP->guarded", "LOP3->IMAD", "IMAD"]
    pairs = list(dict.fromkeys([*named, *sample([p.name for p in pc.PAIRS], every=8)]))  # every pair: tests/sweeps.py
    done = _run(
        "latency-probe", "--arch", "sm_100a", "--build-only", "--build-dir", str(tmp_path), "--pairs", ",".join(pairs)
    )
    assert done.returncode == 0, done.stderr
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert (manifest["arch"], manifest["target"]) == (100, "sm_100a")
    assert sorted(e["pair"] for e in manifest["pairs"]) == sorted(pairs)
    located = {e["pair"] for e in manifest["pairs"] if e["located"]}
    assert set(named) <= located, located
    assert len(located) >= len(pairs) - 4
    for e in manifest["pairs"]:
        assert e["located"] or e["reason"].startswith("not generated"), e
        if e["located"]:
            assert len(e["variants"]) == len(pc.STALLS) and read_cubin(tmp_path / e["variants"]["15"]).arch == 100
    canary = manifest["canary"]
    code = decode_kernel(read_cubin(tmp_path / canary["cubin"]), canary["kernel"])
    assert sum(i.guard == "@!PT" and i.base == "STG" for i in code.instructions) == 1


@pytest.mark.parametrize("target", ["sm_100a", "sm_120"])
def test_barrier_sweep_builds_for_blackwell_with_its_canary(target):
    done = _run("latency-probe", "--arch", target, "--barriers", "--build-only")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1] == f"30 variants for {target} (barrier_probe_{target}.cubin)"
    assert sum(" canary " in line for line in lines) == 2 and sum(" after_d" in line for line in lines) == 16


def test_the_barrier_canary_decides_whether_a_sweep_counts():
    from legality.silicon import barrier_probe as bp

    same = [{"side": "canary", "check": "identical", "status": "ok"}]
    differs = [{"side": "canary", "check": "mismatch", "status": "ok"}]
    assert not bp.canary_ran(same) and bp.canary_ran(differs) and not bp.canary_ran([])


def test_latency_probe_refuses_an_arch_it_cannot_read():
    done = _run("latency-probe", "--arch", "sm_110", "--build-only")
    assert done.returncode == 2 and "reorder does not read sm_110 cubins" in done.stderr
