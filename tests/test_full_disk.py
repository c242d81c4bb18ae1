"""A full disk, a read-only folder, a quota or a file-size limit: one line naming the file, and
nothing half-written, the study database included. `optimize -o` onto a full file system gave
two tracebacks ending in sqlite's "database or disk is full" and left an 8 KiB study.db; "No
space left on device" and "File too large" named no file. The refusals are injected where the
system would say them (a write that stops half way, sqlite's error through SQLAlchemy), so the
tests run anywhere; benchmarks/results/2026-12-01_fuzz/README.md records the same commands on
a 100 KiB tmpfs and a read-only one."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from reorder.base.errors import OutputError
from reorder.base.files import write_atomic, write_failure
from reorder.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
CUBIN = ROOT / "benchmarks" / "kernels" / "cubin" / "gather_histogram.cubin"
RMSNORM = ROOT / "benchmarks" / "kernels" / "cubin" / "rmsnorm.cubin"


def _one_line(capsys, code: int, command: str) -> str:
    err = capsys.readouterr().err
    lines = [x for x in err.strip().splitlines() if "error" in x.lower() or "Traceback" in x]
    assert code == 2 and len(lines) == 1 and lines[0].startswith(f"reorder {command}: error: "), err
    assert "Traceback" not in err
    return lines[0]


def _full_after(monkeypatch, allowed: int, number: int = errno.ENOSPC) -> None:
    """Every file opened through os.fdopen takes `allowed` bytes, then the disk is full."""
    real = os.fdopen

    class Filling:
        def __init__(self, handle) -> None:
            self.handle = handle

        def write(self, data: bytes) -> int:
            self.handle.write(data[:allowed])
            self.handle.flush()
            raise OSError(number, os.strerror(number))

        def __getattr__(self, name: str):
            return getattr(self.handle, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc) -> None:
            self.handle.close()

    monkeypatch.setattr(os, "fdopen", lambda fd, *a, **k: Filling(real(fd, *a, **k)))


@pytest.mark.parametrize(
    ("number", "says"),
    [
        (errno.ENOSPC, "No space left on device (free space there"),
        (errno.EDQUOT, "Disk quota exceeded (free space under the quota"),
        (errno.EROFS, "Read-only file system (choose another -o)"),
        (errno.EFBIG, "File too large (over the file-size limit: ulimit -f)"),
    ],
)
def test_a_refused_write_leaves_the_old_file_and_no_temporary_and_names_the_file(
    tmp_path: Path, monkeypatch, number: int, says: str
) -> None:
    target = tmp_path / "out.cubin"
    target.write_bytes(b"the old output")
    _full_after(monkeypatch, 5, number)
    with pytest.raises(OutputError) as info:
        write_atomic(target, b"x" * 4096)
    assert str(info.value).startswith(f"{target}: cannot write: {says}") and info.value.path == str(target)
    assert target.read_bytes() == b"the old output" and sorted(tmp_path.iterdir()) == [target]


def test_an_output_error_crosses_a_process_boundary() -> None:
    import pickle

    error = write_failure("/x/y.cubin", OSError(errno.ENOSPC, "No space left on device"))
    again = pickle.loads(pickle.dumps(error))
    assert str(again) == str(error) and again.path == "/x/y.cubin"


def test_stalls_onto_a_full_disk_is_one_line_naming_the_output(tmp_path: Path, monkeypatch, capsys) -> None:
    out = tmp_path / "out.cubin"
    _full_after(monkeypatch, 100)
    line = _one_line(capsys, main(["stalls", str(RMSNORM), "--kernel", "rms_norm_f32", "-o", str(out)]), "stalls")
    assert f"{out}: cannot write: No space left on device" in line
    assert list(tmp_path.iterdir()) == []


def _sqlite_full(folder_file: str = "study.db"):
    """open_storage as sqlite does it on a full disk: the file made, its tables not."""
    import sqlite3

    from sqlalchemy.exc import OperationalError

    def open_storage(url: str, *args, **kwargs):
        path = Path(url[len("sqlite:///") :])
        path.parent.mkdir(parents=True, exist_ok=True)
        (path.parent / folder_file).write_bytes(b"\0" * 8192)
        raise OperationalError("CREATE TABLE studies", {}, sqlite3.OperationalError("database or disk is full"))

    return open_storage


def _optimize(tmp_path: Path) -> list[str]:
    return [
        "optimize",
        str(CUBIN),
        "-o",
        str(tmp_path / "out.cubin"),
        "--device",
        "cpu",
        "--budget",
        "1",
        "--jobs",
        "1",
    ]


def test_optimize_onto_a_full_disk_names_the_database_and_leaves_nothing(tmp_path: Path, monkeypatch, capsys) -> None:
    import reorder.search.study

    monkeypatch.setattr(reorder.search.study, "open_storage", _sqlite_full())
    line = _one_line(capsys, main(_optimize(tmp_path)), "optimize")
    db = tmp_path / "out.reorder" / "study.db"
    assert f"{db.resolve()}: cannot write: No space left on device (database or disk is full)" in line
    assert list(tmp_path.iterdir()) == []  # neither the half-made study.db nor its folder


def test_a_resumed_study_keeps_its_database_when_the_disk_fills(tmp_path: Path, monkeypatch, capsys) -> None:
    """What this run added goes; what was there (sqlite keeps a database whole) stays."""
    import reorder.search.study

    folder = tmp_path / "out.reorder"
    folder.mkdir()
    (folder / "study.db").write_bytes(b"an earlier run's study")
    monkeypatch.setattr(reorder.search.study, "open_storage", _sqlite_full("study.db-journal"))
    _one_line(capsys, main(_optimize(tmp_path)), "optimize")
    assert sorted(p.name for p in folder.iterdir()) == ["study.db"]
    assert (folder / "study.db").read_bytes() == b"an earlier run's study"


def test_a_read_only_folder_for_the_study_is_one_line(tmp_path: Path, monkeypatch, capsys) -> None:
    import sqlite3

    from sqlalchemy.exc import OperationalError

    import reorder.search.study

    def refuse(url: str, *args, **kwargs):
        raise OperationalError("connect", {}, sqlite3.OperationalError("unable to open database file"))

    monkeypatch.setattr(reorder.search.study, "open_storage", refuse)
    line = _one_line(capsys, main(_optimize(tmp_path)), "optimize")
    assert "study.db: cannot write: cannot create or open it there" in line


def test_the_report_is_whole_or_absent(tmp_path: Path, monkeypatch) -> None:
    """report.md and trials.csv went through write_text/to_csv: a full disk cut them short."""
    from types import SimpleNamespace

    import pandas as pd

    from reorder.report import markdown

    report = SimpleNamespace(markdown=lambda: "# report\n" + "line\n" * 1000)
    study = SimpleNamespace(trials_dataframe=lambda attrs: pd.DataFrame({"number": range(100)}))
    _full_after(monkeypatch, 10)
    with pytest.raises(OutputError, match=r"report\.md: cannot write: No space left"):
        markdown.write_report(tmp_path, report, study)
    assert list(tmp_path.iterdir()) == []


def test_a_report_that_cannot_be_written_takes_the_output_with_it(tmp_path: Path, monkeypatch, capsys) -> None:
    """On a nearly full tmpfs, optimize --workers 2 wrote out.cubin and its provenance, then
    failed on trials.csv and left both: a failed run leaves nothing it made."""
    import reorder.optimize

    def full(folder, report, study):
        raise OutputError(folder / "trials.csv", "No space left on device (free space there, or choose another -o)")

    monkeypatch.setattr(reorder.optimize, "write_report", full)
    (tmp_path / "keep.txt").write_text("the user's")
    line = _one_line(capsys, main(_optimize(tmp_path)), "optimize")
    assert "trials.csv: cannot write: No space left on device" in line
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]
