"""The optimize report states facts only: the contribution table is of the output (each row
says whether the move pays, was pruned, or why it is kept), a predicted figure has no interval,
the trial counts are trials.csv's rows by state, and trials.csv's columns have readable names."""

from __future__ import annotations

import optuna
import pandas as pd
import ptx_sources  # tests/ptx_sources.py
import pytest
from test_ptx_search import BODY

from reorder.binary.tools import have_tool
from reorder.cli.main import main
from reorder.report.contributions import settle
from reorder.report.markdown import Report, write_report
from reorder.search.scoring import Score

PREDICTED = Score(0.9, 0.9, 0.9, False, {})
MEASURED = Score(0.9, 0.89, 0.91, True, {})


def test_a_predicted_score_has_no_interval():
    assert PREDICTED.line() == "0.9000 (predicted)"
    assert MEASURED.line() == "0.9000 [0.8900, 0.9100] (measured)"
    text = Report("k", "sm_90", "k.cubin", "space", 1, 0, 0, "sc", PREDICTED).markdown()
    result = text.split("## Result")[1].split("##")[0]
    assert "PREDICTED" in result and "CI" not in result and "[" not in result


def _study(complete: int, waiting: int) -> optuna.Study:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study()
    for _ in range(complete):
        trial = study.ask({"sc0": optuna.distributions.CategoricalDistribution(["off", "on"])})
        trial.set_user_attr("moves", "stall_cut#0")
        study.tell(trial, 0.95)
    for _ in range(waiting):
        study.enqueue_trial({"sc0": "on"})
    return study


def test_trial_counts_are_the_csv_rows_by_state(tmp_path):
    report = Report("k", "sm_90", "k.cubin", "space", 5, 0, 0, "sc", PREDICTED)
    md, csv = write_report(tmp_path, report, _study(2, 3))
    rows = pd.read_csv(csv)
    assert len(rows) == 5 and sorted(rows["state"].value_counts().items()) == [("COMPLETE", 2), ("WAITING", 3)]
    line = next(x for x in md.read_text().splitlines() if x.startswith("- trials:"))
    assert line.startswith("- trials: 5 rows in trials.csv: 2 with a score (COMPLETE); 3 enqueued, never run")


def test_trials_csv_columns_are_readable(tmp_path):
    _, csv = write_report(tmp_path, Report("k", "sm_90", "k", "s", 2, 0, 0, "sc", PREDICTED), _study(2, 0))
    columns = list(pd.read_csv(csv).columns)
    assert columns[:3] == ["trial", "ratio", "state"] and "duration_s" in columns and "moves" in columns
    assert "param:sc0" in columns
    assert not [c for c in columns if c.startswith(("params_", "user_attrs_")) or c in ("number", "value")]


def _row(move: str, ratio: float | None, without: str = "0.95 (predicted)") -> dict:
    return {"move": move, "without": without, "effect": f"{ratio:.4f}" if ratio else "-", "ratio": ratio}


def test_rows_scored_on_the_output_say_what_each_move_pays():
    rows = settle([_row("sc", 1.05), _row("lb", 1.0), _row("sw", None, "not scored: --time reached")], True, "", "x")
    assert rows[0]["status"] == "pays: without it +5.000%"
    assert rows[1]["status"].startswith("kept: does not pay (without it +0.000%), not removed: x")
    assert rows[2]["status"].startswith("kept: its removal was not scored")


def test_rows_scored_before_the_last_pruning_say_so():
    rows = settle([_row("sc", 1.05), _row("lb", 0.99)], False, "lb", "the 3 rounds of one removal each ran out")
    assert rows[1]["status"] == "pruned: not in the output"
    assert rows[0]["status"].startswith("kept: scored before lb was pruned, not again after")


def test_no_table_says_why():
    report = Report("k", "sm_90", "k", "s", 1, 0, 0, "PTX hoist:3@top; then ptxas; then SASS none", PREDICTED)
    report.contributions_note = "not measured: --no-contributions"
    assert "(not measured: --no-contributions)" in report.markdown()
    assert (
        "(no moves: the output is the input's copy)"
        in Report("k", "sm_90", "k", "s", 1, 0, 0, "(none)", None).markdown()
    )


@pytest.mark.skipif(not have_tool("ptxas"), reason="needs ptxas")
def test_an_optimize_report_of_a_ptx_winner_states_its_moves(tmp_path):
    """The table rows are the output's moves (or say they were pruned); none is said to pay
    that a note says was pruned; a PTX winner is never '(no moves applied)'."""
    ptx = tmp_path / "k.ptx"
    ptx.write_text(ptx_sources.kernel(BODY))
    out = tmp_path / "fast.cubin"
    argv = ["optimize", str(ptx), "-o", str(out), "--device", "cpu", "--budget", "4", "--jobs", "1"]
    assert main([*argv, "--assume-noalias"]) == 0
    text = (tmp_path / "fast.reorder" / "report.md").read_text()
    assert "no moves applied" not in text and "PTX hoist:" in text
    table = text.split("## Each move's contribution")[1].split("##")[0]
    pruned = [n.split("pruned ")[1].split(":")[0] for n in text.splitlines() if n.startswith("- note: pruned ")]
    rows = [line for line in table.splitlines() if line.startswith("| ")][1:]  # past the header
    assert rows
    for line in rows:
        move, status = line.split(" | ")[0].strip("| "), line.split(" | ")[-1]
        assert status.startswith(("pays", "pruned", "kept")), line
        assert not (move in pruned and status.startswith("pays")), (move, pruned)
