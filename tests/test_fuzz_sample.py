"""A fixed sample of the seeded fuzzer (benchmarks.fuzz) as a standing check: mutated cubins,
PTX files, launch specs (flat and struct), kernel names, and the structure-aware families
(section headers and symbols, .nv.info records, dtypes and spec size: corrupt on purpose, so
refused or a failure) through every command that reads them: no traceback, hang, signal, silent
exit 0, undrawable accepted spec, corrupt file accepted or output left half-written.

The sample is 1,000 cases of seed 0, as four slices of at least 250 cases (mutants 0..,
1000.., 2000.., 3000..; a slice uses about 55, and every family comes up within the first 25
of each), each its own test run by the fuzzer's worker pool, so pytest-xdist spreads them over
the cores. The CPU tier runs the first slice (250 cases, every family asserted in it);
REORDER_FULL_SWEEPS=1 runs all four (tests/sweeps.py). A mutated cubin that reaches nvdisasm
costs nvdisasm's 0.3 s of start-up, which no cache can save (each mutant's bytes are new); a
structure-aware mutant is refused in milliseconds. The 1,000 cases cost about 50 CPU seconds
(the 2,000 this sample had cost about 100, a sixth of the CPU tier; the tier's 250 about 12); a
case's bound is CPU time, not the clock, so a loaded machine
cannot fail them. The long runs (100,003 cases of seed 8 with these families, 0 failures) are
recorded under benchmarks/results/ (*fuzz*): the sample is a standing check that a change did
not break a reader, not the search for new failures."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from sweeps import FULL  # tests/sweeps.py

from benchmarks import fuzz
from benchmarks.fuzz import BAD, STRUCTURED, Case, Planner, classify, run

SAMPLE_CASES = 1000
SLICES = 4


@pytest.mark.slow
@pytest.mark.parametrize("part", range(SLICES if FULL else 1))
def test_fuzz_sample_finds_nothing(part: int) -> None:
    tally = run(SAMPLE_CASES // SLICES, seed=0, workers=2, timeout=60, first=1000 * part)
    assert tally.cases >= SAMPLE_CASES // SLICES and tally.mutants < 1000  # the slices do not overlap
    assert not tally.bad, [(b["mutant"], b["command"], b["outcome"], b["stderr"][-300:]) for b in tally.bad[:5]]
    families = {key.split()[0] for key in tally.by_family}
    assert families >= {"cubin", "spec", "struct", "name", *STRUCTURED}, families
    assert tally.outcomes["ok"] and tally.outcomes["refused"]  # mutants both accepted and refused
    for family in STRUCTURED:  # corrupt on purpose: all refused
        assert {k for k in tally.by_family if k.startswith(family + " ")} == {f"{family} refused"}


def test_mutants_are_reproduced_from_the_seed(tmp_path: Path) -> None:
    first, second = Planner(7, tmp_path / "a"), Planner(7, tmp_path / "b")
    for index in range(12):
        (fa, ca), (fb, cb) = first.cases(index), second.cases(index)
        assert [c.command for c in ca] == [c.command for c in cb]
        assert sorted(p.read_bytes() for p in fa.iterdir()) == sorted(p.read_bytes() for p in fb.iterdir())


def test_outcomes_are_classified_as_failures_or_not(tmp_path: Path) -> None:
    case = Case(0, "cubin", "bit_flips", "k.cubin", "disasm", ("disasm", "m.cubin"))
    assert classify(case, 0, "", "") == "empty"  # exit 0 with nothing
    assert classify(case, 0, "listing\n", "") == "ok"
    assert classify(case, 2, "", "reorder disasm: error: bad\n") == "refused"
    assert classify(case, 2, "", "reorder disasm: error: a\nreorder disasm: error: b\n") == "messy"
    assert classify(case, 2, "", "Traceback (most recent call last):\n  boom\n") == "traceback"
    assert classify(case, 1, "1 violations\n", "") == "verdict"
    assert classify(case, 4, "", "reorder check: error: no CUDA GPU available: none\n") == "no-gpu"
    out = tmp_path / "o.cubin"
    writes = Case(0, "cubin", "bit_flips", "k.cubin", "stalls", ("stalls", "m.cubin", "-o", str(out)))
    assert classify(writes, 0, "", "") == "empty"
    out.write_bytes(b"x")
    assert classify(writes, 0, "", "") == "ok"
    assert set(BAD) == {
        "empty",
        "messy",
        "traceback",
        "hang",
        "signal",
        "undrawable",
        "accepted_corrupt",
        "half_written",
        "running_left",
    }


def test_workers_keep_the_callers_python_path(tmp_path):
    """The GPU machine's wheels live on PYTHONPATH; a worker environment that replaced it
    died at import in every case (exit-worker1)."""
    import os

    from benchmarks.fuzz import ROOT, worker_env

    env = worker_env(tmp_path, {"PYTHONPATH": "/tmp/site", "HOME": "/root"})
    assert env["PYTHONPATH"].split(os.pathsep) == [str(ROOT), "/tmp/site"]
    assert env["CUDA_VISIBLE_DEVICES"] == "" and env["HOME"] == "/root"
    assert worker_env(tmp_path, {})["PYTHONPATH"] == str(ROOT)


def test_struct_and_name_cases_reach_every_command_that_reads_them(tmp_path) -> None:
    structs, names = Planner(4, tmp_path / "s", ("struct",)), Planner(4, tmp_path / "n", ("name",))
    commands = {c.command for i in range(40) for c in structs.cases(i)[1]}
    assert {"check", "time"} <= commands <= {"check", "time", "probe", "optimize"}
    named = [c for i in range(40) for c in names.cases(i)[1]]
    assert {"disasm", "verify", "diff", "check", "time"} <= {c.command for c in named}
    assert all(any(a == "--kernel" or a.startswith("--kernel=") for a in c.argv) for c in named)
    assert any("structs/" in c.base for c in named) and any("structs/" not in c.base for c in named)


def test_an_accepted_struct_spec_that_cannot_be_built_is_a_failure(monkeypatch) -> None:
    """A spec the CLI accepts is drawn and its structs built on a stand-in for cupy: anything
    but a ReorderError there is a failure ('undrawable'), as on the GPU it would be a crash."""
    import timing.devicestructs

    kernels = fuzz.KERNELS / "structs"
    case = Case(
        0,
        "struct",
        "value",
        "s",
        "check",
        (
            "check",
            str(kernels / "cubin" / "last_block.cubin"),
            str(kernels / "cubin" / "last_block.cubin"),
            "--launch",
            str(kernels / "specs" / "last_block_sum_zeros.toml"),
        ),
    )
    assert fuzz._drawn(case) == ""

    def broken(*args, **kwargs):
        raise OverflowError("int too big to convert")

    monkeypatch.setattr(timing.devicestructs, "launch_copies", broken)
    assert fuzz._drawn(case) == "undrawable"


def test_without_ptxas_the_ptx_cases_are_skipped_and_said_to_be(monkeypatch, tmp_path) -> None:
    import reorder.binary.tools

    monkeypatch.setattr(reorder.binary.tools, "have_tool", lambda name: name != "ptxas")
    families, notes = fuzz.families_here()
    assert "ptx" not in families and {"cubin", "spec", "struct", "name"} <= set(families)
    assert len(notes) == 1 and notes[0].startswith("PTX cases skipped: no ptxas")
    planner = Planner(0, tmp_path, families)
    assert all(c.family != "ptx" for i in range(60) for c in planner.cases(i)[1])
    monkeypatch.setattr(reorder.binary.tools, "have_tool", lambda name: False)
    assert fuzz.main(["--cases", "1"]) == 2


def test_a_run_writes_its_result_file(tmp_path, capsys) -> None:
    """The big run's record: commit, seed, workers, wall time, counts per command and outcome."""
    code = fuzz.main(
        [
            "--cases",
            "4",
            "--seed",
            "2",
            "--first",
            "5",
            "--out",
            str(tmp_path),
            "--date",
            "2000-01-01",
            "--commit",
            "abc1234",
        ]
    )
    assert code == 0, capsys.readouterr()
    result = json.loads((tmp_path / "2000-01-01_fuzz_seed2.json").read_text())
    assert result["commit"] == "abc1234" and result["seed"] == 2 and result["workers"] == 1
    assert result["cases"] >= 4 and result["wall_s"] > 0 and result["failures"] == 0
    assert sum(result["outcomes"].values()) == result["cases"] == sum(result["by_command"].values())
    assert result["machine"]["tools"]["nvdisasm"] != "absent"
    page = (tmp_path / "2000-01-01_fuzz_seed2.md").read_text()
    assert "at commit abc1234" in page and "| Command, outcome | cases |" in page


def test_transforming_cases_stay_within_the_hang_bound(tmp_path) -> None:
    """Seed 4 mutant 78: optimize --budget 1 on cfo_ta_descr spent 34 s pruning its winner
    after a 4 s search, a 'hang' no mutation caused. Optimize cases skip the pruning rounds,
    and stalls/batch-loads/optimize run only on kernels the hang bound fits."""
    planner = Planner(4, tmp_path)
    cases = [c for i in range(400) for c in planner.cases(i)[1]]
    optimize = [c for c in cases if c.command == "optimize"]
    assert optimize and all("--no-contributions" in c.argv for c in optimize)
    transformed = {c.base for c in cases if c.command in ("stalls", "batch-loads", "optimize") and c.family != "spec"}
    assert transformed and "structs/cubin/kselect_tensor.cubin" not in transformed


def test_a_hang_is_counted_in_cpu_seconds_of_the_whole_worker_tree() -> None:
    """The hang bound is CPU time (a busy machine gives a case a fraction of a core): the
    worker's CPU includes a live child's (nvdisasm, ptxas), read while the child still runs."""
    import subprocess
    import sys

    from benchmarks.fuzz import tree_cpu_seconds

    spin = "import sys, time\nwhile time.process_time() < 0.3: pass\nprint('spun', flush=True)\ntime.sleep(600)"
    parent = f"import subprocess, sys\nsubprocess.run([sys.executable, '-c', {spin!r}])"
    proc = subprocess.Popen([sys.executable, "-c", parent], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "spun"  # the grandchild has used 0.3 CPU-s and sleeps
        used = tree_cpu_seconds(proc.pid)
        assert used is not None and used >= 0.3, used
    finally:
        for child in subprocess.run(
            ["pgrep", "-P", str(proc.pid)], capture_output=True, text=True, check=False
        ).stdout.split():
            os.kill(int(child), 9)
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("family", STRUCTURED)
def test_every_structure_aware_mutant_is_refused_by_every_command(tmp_path: Path, family: str) -> None:
    """In-process, 40 mutants of each family (a few milliseconds a case: each is refused before
    nvdisasm): the rules of the reader and the spec stay enforced."""
    from benchmarks.fuzz import run_case

    planner = Planner(3, tmp_path, (family,))
    kinds, outcomes = set(), set()
    for index in range(40):
        for case in planner.cases(index)[1]:
            assert case.corrupt
            result = run_case(case)
            kinds.add(case.kind)
            outcomes.add(result["outcome"])
            assert result["outcome"] == "refused", (case.kind, case.command, result["stderr"][-300:])
    assert len(kinds) >= 3 and outcomes == {"refused"}


def test_a_corrupt_input_judged_as_valid_is_a_failure() -> None:
    case = Case(0, "elf", "text_into_code", "k.cubin", "verify", ("verify", "m.cubin"), corrupt=True)
    assert classify(case, 0, "k: sm_90: legal\n", "") == "accepted_corrupt"
    assert classify(case, 1, "1 violations\n", "") == "accepted_corrupt"
    assert classify(case, 2, "", "reorder verify: error: m.cubin: corrupt .text\n") == "refused"
    assert classify(case, 2, "", "reorder verify: error: a\nreorder verify: error: b\n") == "messy"
    assert {"accepted_corrupt", "half_written"} <= set(BAD)


def test_outputs_left_by_a_failed_command_or_temporaries_are_half_written(tmp_path: Path) -> None:
    from benchmarks.fuzz_cases import _clear_outputs, _left_behind

    out = tmp_path / "out.cubin"
    case = Case(0, "cubin", "bit_flips", "k.cubin", "stalls", ("stalls", "m.cubin", "-o", str(out)))
    out.write_bytes(b"from an earlier case")
    paths = _clear_outputs(case)
    assert not out.exists() and _left_behind(paths, 2) == ""
    out.write_bytes(b"x")
    assert _left_behind(paths, 0) == "" and _left_behind(paths, 2) == "half_written"
    out.unlink()
    (tmp_path / ".out.cubin.abc.tmp").write_bytes(b"x")
    assert _left_behind(paths, 0) == "half_written"


def test_a_mix_weights_the_families_and_refuses_unknown_ones() -> None:
    from benchmarks.fuzz import main, mixed, weighted

    assert weighted(mixed(("cubin", "elf", "ptx"), "elf=0.7,cubin=0.3")) == [("cubin", 0.3), ("elf", 0.7)]
    assert weighted(("cubin",)) == [("cubin", 0.34)]
    with pytest.raises(SystemExit):
        main(["--cases", "1", "--mix", "nope=1"])


def test_a_study_left_with_a_running_trial_is_a_failure(tmp_path: Path) -> None:
    """After an optimize case, its study must hold no RUNNING trial (a run that leaves one reads
    as a search still going)."""
    import optuna

    from benchmarks.fuzz_cases import _running_left

    folder = tmp_path / "out.reorder"
    folder.mkdir()
    storage = f"sqlite:///{folder / 'study.db'}"
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(storage=storage, study_name="s")
    study.tell(study.ask(), 1.0)
    assert _running_left([tmp_path / "out.cubin", folder]) == ""
    study.ask()  # never told
    assert _running_left([tmp_path / "out.cubin", folder]) == "running_left"
    (tmp_path / "empty.reorder").mkdir()
    (tmp_path / "empty.reorder" / "study.db").write_bytes(b"")
    assert _running_left([tmp_path / "empty.reorder"]) == ""
