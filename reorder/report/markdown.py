"""The optimize report: what was found, how sure, and why (Markdown, plus CSV via pandas)."""

from __future__ import annotations

import platform
import time
from dataclasses import dataclass, field
from pathlib import Path

from reorder import __version__
from reorder.base.files import write_atomic
from reorder.report.contributions import none_line
from reorder.report.trials import state_counts, trials_frame, trials_line
from reorder.search.scoring import Score


@dataclass
class Report:
    """Everything the report states; each number says whether it is measured or predicted."""

    kernel: str
    arch: str
    cubin: str
    space: str
    trials: int
    failed: int
    duplicates: int
    best_moves: str
    result: Score | None
    contributions: list[dict] = field(default_factory=list)
    finalists: list[dict] = field(default_factory=list)
    timeline: str = ""  # file name of the timeline PNG next to the report, when drawn
    check: str = ""
    verifier: str = ""
    l2: str = ""
    notes: list[str] = field(default_factory=list)
    versions: dict = field(default_factory=dict)
    failures: dict = field(default_factory=dict)  # failure_class -> count (a quarter of a budget can go here)
    pruned: dict = field(default_factory=dict)  # failure_class of the reason -> trials settled before scoring
    outcome: str = ""  # the run's last line: what was written, its ratio and CI, measured or predicted
    trial_states: dict = field(default_factory=dict)  # trials by state, as trials.csv has them (write_report)
    contributions_note: str = ""  # why there is no contribution table, when there is none
    unmeasured: list[str] = field(default_factory=list)  # facts the verdict rests on, never measured on silicon
    sections: list[str] = field(default_factory=list)  # more Markdown sections (several launch shapes: per shape)

    def _trials_line(self) -> str:
        """The trial counts of trials.csv's rows by state, then what the settled ones were."""
        line = trials_line(self.trial_states) if self.trial_states else f"- trials: {self.trials}"
        settled = sum(self.pruned.values())
        if settled:
            line += (
                f"; {settled} of them settled before scoring, not counted in --budget ({self.duplicates} binaries "
                "already scored or the original's, which carry that score)"
            )
        return line

    def markdown(self) -> str:
        lines = [
            f"# reorder optimize: {self.kernel} ({self.arch})",
            "",
            f"- input: `{self.cubin}`",
            f"- date: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}",
            f"- move space: {self.space}",
            self._trials_line(),
            f"- best candidate's moves: {self.best_moves}",
            "",
        ]
        for title, counts in (
            ("failed trials by reason", self.failures),
            ("pruned before scoring (no GPU trial spent, not counted in --budget)", self.pruned),
        ):
            if counts:
                lines[-1:-1] = [
                    f"- {title}: "
                    + "; ".join(f"{n} x {why}" for why, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
                ]
        lines += ["## Result", ""]
        if self.outcome:
            lines += [self.outcome.removeprefix("result: "), ""]
        if self.result is None:
            lines.append("No candidate completed; the original is kept.")
        else:
            r = self.result
            if r.measured:
                lines.append(
                    f"time(optimized)/time(original) = {r.value:.4f}, 95% CI [{r.low:.4f}, {r.high:.4f}], "
                    f"measured on the GPU, L2 {self.l2}"
                )
            else:  # the static model's figure is exact for the model and says nothing of noise: no interval
                lines.append(
                    f"time(optimized)/time(original) = {r.value:.4f}, PREDICTED by the static model (no GPU), "
                    "not measured"
                )
            if r.measured:
                d = r.detail
                at = f" at {d['shape']}" if d.get("shape") else ""  # several launch shapes: the first
                lines.append(
                    f"original {d.get('a_us', float('nan')):.3f} us, optimized {d.get('b_us', float('nan')):.3f} "
                    f"us per launch{at}; {d.get('rounds')} paired rounds; SM clock {d.get('clock_mhz')} MHz; "
                    f"verdict: {d.get('verdict')}"
                )
        if self.finalists:
            lines += [
                "",
                "## Finalists (the search's best binaries, scored again; the best final score wins)",
                "",
                "| moves | search score | final score |",
                "|---|---|---|",
            ]
            lines += [f"| {f['moves']} | {f['search']} | {f['final']} |" for f in self.finalists]
        for section in self.sections:
            lines += ["", section]
        lines += ["", "## Each move's contribution (remove it, score again)", ""]
        if self.contributions:
            lines += ["| move | without it | ratio without / with | status |", "|---|---|---|---|"]
            lines += [
                f"| {c['move']} | {c['without']} | {c['effect']} | {c.get('status', '')} |" for c in self.contributions
            ]
        else:
            lines.append(none_line(self.best_moves, self.contributions_note))
        if self.timeline:
            lines += ["", "## Timeline (sliding probe, original vs optimized)", "", f"![timeline]({self.timeline})"]
        lines += ["", "## Evidence", "", f"- byte check: {self.check}", f"- verifier: {self.verifier}"]
        lines += [f"- note: {n}" for n in self.notes]
        if self.unmeasured:
            lines += [
                "",
                f"## Facts never measured on {self.arch} silicon ({len(self.unmeasured)}, all the verdict used)",
                "",
            ]
            lines += [f"- {fact}" for fact in self.unmeasured]
        lines += ["", "## Versions", ""] + [f"- {k}: {v}" for k, v in sorted(self.versions.items())]
        return "\n".join(lines) + "\n"


def versions() -> dict:
    from reorder.binary.tools import run_tool

    out = {"reorder": __version__, "python": platform.python_version()}
    try:
        out["nvdisasm"] = run_tool("nvdisasm", "--version").strip().splitlines()[-1]
    except Exception as exc:  # noqa: BLE001 - a version line must never stop the report
        out["nvdisasm"] = f"unknown ({exc})"
    try:
        import optuna

        out["optuna"] = optuna.__version__
    except ImportError:
        out["optuna"] = "missing"
    return out


def failure_class(reason: str) -> str:
    """A failed trial's reason without its particulars (offsets, registers, cycles, values),
    so that failures can be counted by kind: 'build: move rejected: swap' or 'outputs differ'."""
    if not reason:
        return "no reason recorded (the worker died, or the trial was stopped)"
    head = reason.split(" @ ")[0]
    for cut in (": verifier rejected", " at ", " (", ": buffer", ": grid"):
        head = head.split(cut)[0]
    return head.strip()[:80]


def failures_by_class(study) -> dict[str, int]:
    """failure_class -> number of FAIL trials of the study."""
    import optuna

    out: dict[str, int] = {}
    for t in study.trials:
        if t.state == optuna.trial.TrialState.FAIL:
            stopped = t.user_attrs.get("interrupted")
            key = f"interrupted: {stopped}" if stopped else failure_class(t.user_attrs.get("failure", ""))
            out[key] = out.get(key, 0) + 1
    return out


def pruned_by_class(study) -> dict[str, int]:
    """failure_class of the reason -> number of trials pruned before scoring (a rejected
    build, a duplicate binary, the original's bytes)."""
    out: dict[str, int] = {}
    for t in study.trials:
        if "pruned" in t.user_attrs:
            key = failure_class(t.user_attrs["pruned"])
            out[key] = out.get(key, 0) + 1
    return out


def write_report(folder: Path, report: Report, study) -> tuple[Path, Path]:
    """report.md and trials.csv (every trial with its parameters, value, state and reasons)."""
    frame = trials_frame(study, failure_class)
    report.trial_states = state_counts(frame)
    md = write_atomic(folder / "report.md", report.markdown().encode())  # whole or absent, on a full disk too
    csv = write_atomic(folder / "trials.csv", frame.to_csv(index=False).encode())
    return md, csv
