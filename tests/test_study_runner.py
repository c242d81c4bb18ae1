"""The shared GPU-study runner (benchmarks/studies/runner.py) on a toy study and a dry device:
deadlines respected, records written as rows come, a failing step recorded and not raised."""

from __future__ import annotations

import csv
import dataclasses
import json
import time
from pathlib import Path
from typing import ClassVar

from benchmarks.studies import __main__ as entry
from benchmarks.studies.runner import DryDevice, Record, Study, lanes, main


@dataclasses.dataclass
class ToyRecord(Record):
    prefix: ClassVar[str] = "toy"
    out: Path
    deadline: float
    stamps: dict
    items: list = dataclasses.field(default_factory=list)


def _toy_step(run, rec: ToyRecord) -> None:
    """Each item 'timed' on the dry device; item 'bad' raises inside its lane."""

    def one(name: str) -> None:
        if name == "bad":
            raise RuntimeError("this candidate broke")
        rec.add("items", {"item": name, "status": "ok", **run.device.made_up(name)})

    lanes(rec, "items", run.manifest["items"], one, key=lambda name: {"item": name}, reserve_s=1.0)


def _study(**changes) -> Study:
    base = Study(
        name="toy",
        build=lambda argv: 0,
        record=lambda run: ToyRecord(run.args.out, run.deadline, run.stamps),
        check_and_time=_toy_step,
        plot=lambda rec, out: f"# toy\n\n{len(rec.items)} rows\n",
        doc="A toy study.",
        deadline_s=60.0,
    )
    return dataclasses.replace(base, **changes)


def _build(tmp_path: Path, items=("a", "bad", "b")) -> Path:
    build = tmp_path / "build"
    build.mkdir()
    (build / "manifest.json").write_text(json.dumps({"commit": "abc1234", "items": list(items)}))
    return build


def _rows(path: Path) -> list[dict]:
    return list(csv.DictReader(path.open()))


def test_a_dry_run_writes_the_record_and_the_summary_and_a_broken_item_is_a_row(tmp_path):
    out = tmp_path / "out"
    assert main(_study(), ["--build", str(_build(tmp_path)), "--out", str(out), "--dry-run"]) == 0
    rows = _rows(out / "toy_items.csv")
    assert [(r["item"], r["status"]) for r in rows] == [("a", "ok"), ("bad", "error"), ("b", "ok")]
    assert rows[1]["reason"] == "RuntimeError: this candidate broke"
    assert {r["gpu"] for r in rows} == {"none (dry run)"} and {r["commit"] for r in rows} == {"abc1234"}
    assert float(rows[0]["ratio"]) == DryDevice.made_up("a")["ratio"]  # the same key, the same made-up number
    assert (out / "summary.md").read_text() == "# toy\n\n3 rows\n"
    assert not (out / "toy_failures.csv").exists()


def test_the_deadline_skips_what_it_leaves_no_time_for(tmp_path):
    out = tmp_path / "out"
    started = time.process_time()
    assert main(_study(), ["--build", str(_build(tmp_path)), "--out", str(out), "--dry-run", "--deadline", "0.5"]) == 0
    rows = _rows(out / "toy_items.csv")
    assert [(r["item"], r["status"], r["reason"]) for r in rows] == [
        (n, "skipped", "deadline") for n in "a bad b".split()
    ]
    assert time.process_time() - started < 2.0


def test_a_failing_step_is_recorded_not_raised(tmp_path, capsys):
    def broken(run, rec):
        rec.add("items", {"item": "a", "status": "ok"})
        raise ValueError("the device went away")

    def unplottable(rec, out):
        raise KeyError("ratio")

    out = tmp_path / "out"
    study = _study(check_and_time=broken, plot=unplottable)
    assert main(study, ["--build", str(_build(tmp_path)), "--out", str(out), "--dry-run"]) == 1
    failures = _rows(out / "toy_failures.csv")
    assert [(r["step"], r["status"], r["reason"]) for r in failures] == [
        ("check_and_time", "error", "ValueError: the device went away"),
        ("plot", "error", "KeyError: 'ratio'"),
    ]
    assert _rows(out / "toy_items.csv")[0]["item"] == "a"  # what was measured before the failure stays
    err = capsys.readouterr().err
    assert "the check_and_time step failed" in err and "Traceback" not in err


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    assert main(_study(), ["--build", str(tmp_path / "none"), "--out", str(tmp_path / "out"), "--dry-run"]) == 2
    assert "manifest.json not found" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    refusing = _study(select=lambda manifest, args: (_ for _ in ()).throw(ValueError("cells not in the build")))
    assert main(refusing, ["--build", str(_build(tmp_path)), "--out", str(tmp_path / "out"), "--dry-run"]) == 2
    assert capsys.readouterr().err.strip() == "toy: cells not in the build"
    assert entry.main(["nope"]) == 2 and "unknown study 'nope'" in capsys.readouterr().err


def test_prepare_runs_the_cpu_build_with_the_rest_of_the_line(tmp_path):
    seen = []
    study = _study(build=lambda argv: seen.append(argv) or 0)
    assert main(study, ["--prepare", "--out", str(tmp_path)]) == 0 and seen == [["--out", str(tmp_path)]]


def test_every_registered_study_is_a_study():
    from benchmarks.studies import STUDIES, study

    assert all(isinstance(study(name), Study) and study(name).name == name for name in STUDIES)
