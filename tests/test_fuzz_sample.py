"""A fixed sample of the seeded fuzzer (benchmarks.fuzz) as a standing check: mutated cubins,
PTX files and launch specs through every command that reads them, no traceback, hang,
signal, silent exit 0 or undrawable accepted spec.

The sample is the first 500 cases of seed 0, not the issue's 2,000: a mutated cubin that
reaches nvdisasm costs its ~0.45 s start-up (half the cubin mutants do), so 2,000 cases take
about 4.5 minutes on 2 cores; 500 take about a minute. The long runs are recorded under
benchmarks/results/ (fuzz_*.md)."""

from __future__ import annotations

from pathlib import Path

from benchmarks.fuzz import BAD, Case, Planner, classify, run

SAMPLE_CASES = 500


def test_fuzz_sample_finds_nothing() -> None:
    tally = run(SAMPLE_CASES, seed=0, workers=2, timeout=60)
    assert tally.cases >= SAMPLE_CASES
    assert not tally.bad, [(b["mutant"], b["command"], b["outcome"], b["stderr"][-300:]) for b in tally.bad[:5]]
    assert {key.split()[0] for key in tally.by_family} == {"cubin", "spec", "ptx"}
    assert tally.outcomes["ok"] and tally.outcomes["refused"]  # mutants both accepted and refused


def test_mutants_are_reproduced_from_the_seed(tmp_path: Path) -> None:
    first, second = Planner(7, tmp_path / "a"), Planner(7, tmp_path / "b")
    for index in range(12):
        (fa, ca), (fb, cb) = first.cases(index), second.cases(index)
        assert [c.command for c in ca] == [c.command for c in cb]
        assert sorted(p.read_bytes() for p in fa.iterdir()) == sorted(p.read_bytes() for p in fb.iterdir())


def test_outcomes_are_classified_as_the_issue_counts_them(tmp_path: Path) -> None:
    case = Case(0, "cubin", "bit_flips", "k.cubin", "disasm", ("disasm", "m.cubin"))
    assert classify(case, 0, "", "") == "empty"  # exit 0 with nothing
    assert classify(case, 0, "listing\n", "") == "ok"
    assert classify(case, 2, "", "reorder disasm: error: bad\n") == "refused"
    assert classify(case, 2, "", "reorder disasm: error: a\nreorder disasm: error: b\n") == "messy"
    assert classify(case, 2, "", "Traceback (most recent call last):\n  boom\n") == "traceback"
    assert classify(case, 1, "1 violations\n", "") == "verdict"
    out = tmp_path / "o.cubin"
    writes = Case(0, "cubin", "bit_flips", "k.cubin", "stalls", ("stalls", "m.cubin", "-o", str(out)))
    assert classify(writes, 0, "", "") == "empty"
    out.write_bytes(b"x")
    assert classify(writes, 0, "", "") == "ok"
    assert {"empty", "messy", "traceback", "hang", "signal", "undrawable"} == set(BAD)


def test_workers_keep_the_callers_python_path(tmp_path):
    """The GPU machine's wheels live on PYTHONPATH; a worker environment that replaced it
    died at import in every case (exit-worker1)."""
    import os

    from benchmarks.fuzz import ROOT, worker_env

    env = worker_env(tmp_path, {"PYTHONPATH": "/tmp/site", "HOME": "/root"})
    assert env["PYTHONPATH"].split(os.pathsep) == [str(ROOT), "/tmp/site"]
    assert env["CUDA_VISIBLE_DEVICES"] == "" and env["HOME"] == "/root"
    assert worker_env(tmp_path, {})["PYTHONPATH"] == str(ROOT)
