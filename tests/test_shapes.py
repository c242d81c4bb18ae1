"""Several launch shapes in one search: the weighted objective and its CI, the race, the
per-shape groups, the dispatch manifest and its loader; then `optimize --launch A --launch B
--launch C --per-shape` end to end, its GPU faked by a pool that answers the byte-check and
timing jobs (tests/fake_shapes.py)."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from reorder.report.pershape import Binary, group_shapes, original_binary, settle_groups
from reorder.report.shapekey import dispatch_key, split_ranges
from reorder.search.shapes import MIN_HISTORY, Ratio, estimate, geomean, informative_order, race
from tests.fake_shapes import FakeShapePool
from timing.spec import load_spec

ROOT = Path(__file__).resolve().parent.parent
CUBIN = ROOT / "tests" / "corpus" / "cubin" / "sm_90" / "elementwise.cubin"
SPEC = ROOT / "tests" / "corpus" / "specs" / "copy_grid_stride.toml"
KERNEL = "copy_grid_stride"


def R(v: float, half: float = 0.005) -> Ratio:
    return Ratio(v, v * (1 - half), v * (1 + half))


def _specs(tmp: Path, grids=(1, 16, 1024)) -> list[Path]:
    """copy_grid_stride (a grid-stride loop: any grid is right) at several grids."""
    text = SPEC.read_text()
    out = []
    for g in grids:
        path = tmp / f"grid{g}.toml"
        path.write_text(text.replace("grid = [1024, 1, 1]", f"grid = [{g}, 1, 1]"))
        out.append(path)
    return out


# ---------------------------------------------------------------- the objective


def test_geomean_weights_and_ci() -> None:
    row = {"a": Ratio(0.5, 0.49, 0.51), "b": Ratio(2.0, 1.9, 2.1)}
    g = geomean(row, {"a": 1, "b": 1})
    assert g.value == pytest.approx(1.0)  # 0.5 at one shape and 2.0 at another is a wash
    assert g.low < 1.0 < g.high
    heavy = geomean(row, {"a": 3, "b": 1})
    assert heavy.value == pytest.approx(math.exp(0.75 * math.log(0.5) + 0.25 * math.log(2.0)))
    # independent shapes: the geomean's CI is narrower than the widest shape's (in log terms)
    wide = max(math.log(r.high / r.low) for r in row.values())
    assert math.log(g.high / g.low) < wide


def test_a_dropped_trial_is_estimated_worse_than_the_incumbent() -> None:
    incumbent = {"a": R(0.8), "b": R(0.9)}
    weights = {"a": 1, "b": 1}
    est = estimate({"a": R(0.95)}, incumbent, weights)
    assert est.value > geomean(incumbent, weights).value


# ---------------------------------------------------------------- the race


def _history() -> list[dict]:
    """Three trials timed in full: B is 5% behind A at 'small' and 9% ahead at 'large'."""
    return [
        {"small": R(0.74), "large": R(0.94)},  # A: barrier placement
        {"small": R(0.776), "large": R(0.855)},  # B: top placement
        {"small": R(0.99), "large": R(0.99)},  # stall cuts only
    ]


def test_race_keeps_everything_until_enough_trials_are_timed_in_full() -> None:
    verdict = race("small", R(1.5), _history()[: MIN_HISTORY - 1], {"small": 1, "large": 1})
    assert not verdict.drop


def test_race_drops_only_beyond_the_learnt_reversal_margin() -> None:
    weights = {"small": 1, "large": 1}
    # 3% behind the incumbent at 'small': B made up 5% elsewhere, so this one may too
    assert not race("small", R(0.762, 0.002), _history(), weights).drop
    # 20% behind: more than any trial timed in full ever made up
    verdict = race("small", R(0.92, 0.002), _history(), weights)
    assert verdict.drop and "dropped after small" in verdict.why


def test_informative_shape_is_where_trials_differ_with_the_objective() -> None:
    history = [{"flat": R(1.0), "moves": R(v)} for v in (0.7, 0.8, 0.9, 1.0)]
    order = informative_order(["flat", "moves"], {"flat": 5, "moves": 1}, history, {"flat": 1.0, "moves": 1.0})
    assert order[0] == "moves"  # the heavier weight tells nothing where every trial measures alike
    assert informative_order(["x", "y"], {"x": 1, "y": 2}, [], {})[0] == "y"  # no history: heaviest first


def _scorer(tmp_path: Path, pool: FakeShapePool):
    from reorder.search.shapescorer import shape_scorer

    original = tmp_path / "original.cubin"
    original.write_bytes(CUBIN.read_bytes())
    return shape_scorer(original, _specs(tmp_path), (), KERNEL, pool), original


def _candidates(tmp_path: Path, original: Path, want) -> list[Path]:
    """Candidate files whose fake ratio (the same at every shape) satisfies `want`."""
    from tests.fake_shapes import fake_ratio

    out = []
    for k in range(2000):
        data = original.read_bytes() + f"candidate {k}".encode()
        if want(fake_ratio(data, b"", (1,), same_everywhere=True)):
            path = tmp_path / f"c{k}.cubin"
            path.write_bytes(data)
            out.append(path)
    return out


def test_the_scorer_races_a_search_trial_and_times_a_finalist_everywhere(tmp_path: Path) -> None:
    pool = FakeShapePool(same_everywhere=True)
    scorer, original = _scorer(tmp_path, pool)
    good = _candidates(tmp_path, original, lambda r: r < 0.85)[:MIN_HISTORY]
    bad = _candidates(tmp_path, original, lambda r: r > 1.05)[0]
    for path in good:
        assert not scorer.score(path).detail["raced"]
    assert pool.count("time_job") == 3 * MIN_HISTORY and pool.count("check_job") == MIN_HISTORY
    dropped = scorer.score(bad)
    assert dropped.detail["raced"].startswith("dropped after")
    assert pool.count("time_job") == 3 * MIN_HISTORY + 1  # timed at its first shape only
    assert pool.count("check_job") == MIN_HISTORY  # and never byte-checked: it cannot count
    assert dropped.detail["check_detail"].startswith("not checked") and scorer.ledger.checks == MIN_HISTORY
    assert dropped.value > min(scorer.score(p, budget_s=1.0).value for p in good)
    final = scorer.score(bad, budget_s=1.0)  # a finalist is never raced
    assert not final.detail["raced"] and len(final.detail["shapes"]) == 3
    assert set(scorer.ledger.finals) >= {__import__("hashlib").sha256(bad.read_bytes()).hexdigest()}
    assert sum(scorer.ledger.dropped.values()) == 1 and scorer.ledger.full == MIN_HISTORY


def test_a_wrong_trial_that_survives_the_race_is_rejected_by_its_check(tmp_path: Path) -> None:
    from reorder.search.scoring import Rejected

    pool = FakeShapePool(same_everywhere=True, mismatch=b"wrong")
    scorer, original = _scorer(tmp_path, pool)
    for path in _candidates(tmp_path, original, lambda r: 0.9 < r < 0.95)[:MIN_HISTORY]:
        scorer.score(path)
    from tests.fake_shapes import fake_ratio

    data = next(
        d
        for k in range(2000)
        if fake_ratio(d := original.read_bytes() + b"wrong %d" % k, b"", (1,), same_everywhere=True) < 0.85
    )
    fast = tmp_path / "wrong.cubin"
    fast.write_bytes(data)  # faster than every trial at the race's shape: it goes on to its check
    with pytest.raises(Rejected, match="outputs differ"):
        scorer.score(fast)
    assert pool.count("check_job") == MIN_HISTORY + 1 and scorer.ledger.full == MIN_HISTORY
    assert set(scorer.ledger.check_shape_s) == {"grid1", "grid16", "grid1024"}


def test_the_recheck_covers_every_shape_and_check_launch(tmp_path: Path) -> None:
    pool = FakeShapePool()
    scorer, original = _scorer(tmp_path, pool)
    extra = load_spec(SPEC)
    line = scorer.recheck(original, (extra,), 2, 1000)
    job = pool.jobs[-1]
    assert job.args[2].grid == (1, 1, 1)
    assert [s.grid for s in dict(job.kwargs)["more"]] == [(16, 1, 1), (1024, 1, 1)]  # the spec's own is 1024 too
    assert "2 sets" in line


# ---------------------------------------------------------------- groups and the manifest


def _binaries() -> list[Binary]:
    barrier = Binary("b" * 64, "barrier", {"r1": R(0.74), "r16": R(0.75), "r1024": R(0.935)})
    top = Binary("t" * 64, "top", {"r1": R(0.776), "r16": R(0.794), "r1024": R(0.855)})
    return [barrier, top, original_binary("o" * 64, ["r1", "r16", "r1024"])]


def test_groups_split_where_the_best_differs_beyond_the_cis() -> None:
    groups = group_shapes(["r1", "r16", "r1024"], _binaries(), {"r1": 1, "r16": 1, "r1024": 1})
    assert [(g.labels, g.binary.moves) for g in groups] == [(("r1", "r16"), "barrier"), (("r1024",), "top")]


def test_one_group_when_one_binary_is_within_every_ci() -> None:
    same = Binary("s" * 64, "same", {"r1": R(0.76, 0.05), "r16": R(0.76, 0.05), "r1024": R(0.88, 0.05)})
    groups = group_shapes(["r1", "r16", "r1024"], [same, *_binaries()], {"r1": 1, "r16": 1, "r1024": 1})
    assert len(groups) == 1 and groups[0].binary.moves == "same"


def test_a_binary_failing_its_recheck_is_never_dispatched() -> None:
    binaries = _binaries()
    groups, notes = settle_groups(
        ["r1", "r16", "r1024"], binaries, {"r1": 1, "r16": 1, "r1024": 1}, lambda b: "differs" * (b.moves == "top")
    )
    assert all(g.binary.moves != "top" for g in groups) and "top" in notes[0]
    assert groups[-1].binary.moves in ("barrier", "original")


def test_split_ranges_meet_halfway_in_ratio() -> None:
    assert split_ranges([[1, 16], [1024, 8192]]) == [[None, 128], [129, None]]
    assert split_ranges([[3]]) == [[None, None]]


def test_dispatch_key_is_what_tells_the_launches_apart(tmp_path: Path) -> None:
    specs = [load_spec(p) for p in _specs(tmp_path)]
    assert dispatch_key(specs) == ("blocks",)
    grid_fixed = [SimpleNamespace(grid=(8, 1, 1), block=(32, 1, 1), params=(), buffers=()) for _ in range(2)]
    grid_fixed[0].params = (SimpleNamespace(name="num_bags", value=64),)
    grid_fixed[1].params = (SimpleNamespace(name="num_bags", value=512),)
    assert dispatch_key(grid_fixed) == ("param num_bags",)


# ---------------------------------------------------------------- end to end, the GPU faked


def _optimize(tmp_path: Path, monkeypatch, pool: FakeShapePool, *extra: str) -> tuple[int, Path]:
    from reorder import optimize
    from reorder.cli.main import main
    from timing import worker

    monkeypatch.setattr(worker, "WorkerPool", lambda devices=None: pool)
    monkeypatch.setattr(optimize, "_choose_device", lambda args: True)
    out = tmp_path / "fast.cubin"
    argv = ["optimize", str(CUBIN), "--kernel", KERNEL, "-o", str(out), "--budget", "6", "--jobs", "1"]
    argv += ["--time", "120s", "--no-contributions", "--recheck-sets", "2"]
    for spec in _specs(tmp_path):
        argv += ["--launch", str(spec)]
    return main(argv + list(extra)), out


def test_optimize_per_shape_end_to_end(tmp_path: Path, monkeypatch) -> None:
    pool = FakeShapePool()
    code, _ = _optimize(tmp_path, monkeypatch, pool, "--per-shape", "--weights", "1,1,2")
    assert code == 0
    folder = tmp_path / "fast.reorder"
    report = (folder / "report.md").read_text()
    for title in ("## Launch shapes", "## Each shape's own best", "## What the search spent where"):
        assert title in report
    data = json.loads((folder / "shapes.json").read_text())
    labels = ["grid1", "grid16", "grid1024"]
    weights = {"grid1": 1, "grid16": 1, "grid1024": 2}
    finals = {sha: {s: Ratio(*f["ratios"][s]) for s in labels} for sha, f in data["finals"].items()}
    assert finals, "finalists were timed at every shape"
    written = finals.get(data["winner"])
    if written is not None:  # the written binary's geomean is the best of every finalist's
        best = min(geomean(r, weights).value for r in finals.values())
        assert geomean(written, weights).value == pytest.approx(best)
    # every trial was checked at every shape: each check job carries the two other launches
    assert all(len(dict(j.kwargs)["more"]) >= 2 for j in pool.jobs if j.func.endswith(":check_job"))
    doc = json.loads((folder / "dispatch" / "manifest.json").read_text())
    assert doc["key"] == ["blocks"]
    for group in doc["groups"]:
        assert (folder / "dispatch" / group["cubin"]).is_file()
        for shape in group["shapes"]:  # each shape's binary reaches that shape's best within its CI
            assert shape["ratio"][1] <= shape["best_here"]["ratio"][2]
    helper = _import(folder / "dispatch" / "dispatch.py")
    for shape in (s for g in doc["groups"] for s in g["shapes"]):
        blocks = int(shape["key"][0])
        chosen = helper.choose(folder / "dispatch" / "manifest.json", grid=(blocks, 1, 1))
        assert chosen.name == next(g["cubin"] for g in doc["groups"] if shape in g["shapes"])
    assert helper.choose(folder / "dispatch" / "manifest.json", grid=(10**6,)).is_file()  # beyond every range


def test_optimize_per_shape_without_a_gain_writes_one_binary(tmp_path: Path, monkeypatch) -> None:
    code, _ = _optimize(tmp_path, monkeypatch, FakeShapePool(same_everywhere=True), "--per-shape")
    assert code == 0
    doc = json.loads((tmp_path / "fast.reorder" / "dispatch" / "manifest.json").read_text())
    assert doc["gain"] is False and len(doc["groups"]) == 1 and "no real gain" in doc["note"]
    assert doc["groups"][0]["range"] == [None, None]


def test_the_loader_loads_the_chosen_cubin(tmp_path: Path, monkeypatch) -> None:
    from reorder.report import dispatch

    (tmp_path / "a.cubin").write_bytes(b"a")
    (tmp_path / "b.cubin").write_bytes(b"b")
    doc = {"kernel": "k", "key": ["param n"], "groups": []}
    doc["groups"] = [
        {"range": [None, 100], "cubin": "a.cubin", "shapes": [{"key": [10]}]},
        {"range": [101, None], "cubin": "b.cubin", "shapes": [{"key": [1000]}]},
    ]
    (tmp_path / "manifest.json").write_text(json.dumps(doc))
    loaded = []
    fake = SimpleNamespace(
        RawModule=lambda path: SimpleNamespace(get_function=lambda name: loaded.append((Path(path).name, name)))
    )
    monkeypatch.setitem(sys.modules, "cupy", fake)
    dispatch.load(tmp_path / "manifest.json", params={"n": 500})
    assert loaded == [("b.cubin", "k")]
    with pytest.raises(ValueError, match="params"):
        dispatch.choose(tmp_path / "manifest.json", grid=(3,))


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--weights", "1,2"], "--weights"),
        (["--weights", "1,-1,1"], "--weights"),
    ],
)
def test_bad_weights_are_one_line(tmp_path: Path, monkeypatch, capsys, extra: list[str], says: str) -> None:
    code, out = _optimize(tmp_path, monkeypatch, FakeShapePool(), *extra)
    err = capsys.readouterr().err.strip().splitlines()
    assert code != 0 and says in err[-1] and not out.exists()


def test_per_shape_needs_several_launches(tmp_path: Path, capsys) -> None:
    from reorder.cli.main import main

    code = main(["optimize", str(CUBIN), "--kernel", KERNEL, "-o", str(tmp_path / "o.cubin"), "--per-shape"])
    assert code != 0 and "--per-shape needs two or more --launch" in capsys.readouterr().err


def _import(path: Path):
    spec = importlib.util.spec_from_file_location("dispatch_copy", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
