"""rt.tune over several autotune key values (reorder.triton.keys) on the CPU: each argument set
becomes a launch shape of one multi-shape search, per-shape groups become stored binaries in a
manifest keyed by the key values, the autotuner's pruning installs the group's binary for a
launch by its key (an unseen key: the group whose range holds it), bad key values refused."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from reorder.base.errors import InputError
from reorder.triton import keys
from reorder.triton.request import Request, split_options
from reorder.triton.runs import Found
from reorder.triton.tune import TunedConfig, TuneResult, _key_groups, marked_config

triton = pytest.importorskip("triton")


@pytest.fixture
def triton_env(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))
    monkeypatch.setenv("REORDER_CACHE", str(tmp_path / "reorder-cache"))
    return tmp_path


def _rms(rows: int, cols: int):
    from reorder.suite.triton_kernels import family, stand_in_args

    case = family("rmsnorm_row_fp16").case((rows, cols))
    return case, stand_in_args(case)


def test_tune_over_key_values_runs_one_search_at_every_key_and_writes_their_manifest(triton_env):
    from reorder.triton.tune import tune

    small, small_args = _rms(16, 4096)
    wide, wide_args = _rms(1024, 2048)
    result = tune(
        small.kernel,
        key=["n_cols"],
        launches=[(small_args, small.grid), (wide_args, wide.grid)],
        weights=[3, 1],
        configs=[{"num_warps": 4}],
        budget=1,
        arch=90,
        device="cpu",
        outputs=small.outputs,
        folder=triton_env / "tune",
        **small.constexprs,
    )
    (row,) = result.rows
    specs = sorted(p.name for p in row.folder.glob("*.toml"))
    assert specs == ["n_cols2048.toml", "n_cols4096.toml"]  # each key value a launch shape of one search
    assert "grid = [1024, 1, 1]" in (row.folder / "n_cols2048.toml").read_text()
    report = (row.folder / "reorder.reorder" / "report.md").read_text()
    assert "2 launch shapes" in report  # one multi-shape search, not two runs
    doc = json.loads(row.manifest.read_text())
    assert doc["key"] == ["param n_cols"] and not doc["gain"] and "static model" in doc["note"]
    (group,) = doc["groups"]
    assert group["range"] == [None, None] and group["tuned"] == row.key
    assert sorted(s["key"] for s in group["shapes"]) == [[2048.0], [4096.0]]
    assert (row.manifest.parent / group["cubin"]).is_file()
    assert result.configs == [{"num_warps": 4}, row.marked]  # no real gain: one binary, one twin
    prune = result.dispatch()["early_config_prune"]
    assert prune(result.configs, {"n_cols": 100000}) == result.configs  # an unseen key: the one group's binary


def _two_group_run(tmp: Path, monkeypatch) -> tuple[list[keys.KeyGroup], str, bytes]:
    """What optimize --per-shape leaves when two shapes want different binaries, read into key groups."""
    monkeypatch.setenv("REORDER_CACHE", str(tmp / "reorder-cache"))
    folder = tmp / "reorder.reorder"
    (folder / "dispatch").mkdir(parents=True)
    (folder / "dispatch" / "k.0.cubin").write_bytes(b"binary for small")
    (folder / "dispatch" / "k.1.cubin").write_bytes(b"binary for wide")
    shape = lambda label, r: {"launch": label, "ratio": [r, r - 0.01, r + 0.01]}  # noqa: E731
    doc = {
        "gain": True,
        "note": "2 groups: ...",
        "groups": [
            {"cubin": "k.0.cubin", "moves": "hoist", "shapes": [shape("n_cols256", 0.8), shape("n_cols512", 0.82)]},
            {"cubin": "k.1.cubin", "moves": "prefetch:2", "shapes": [shape("n_cols8192", 0.9)]},
        ],
    }
    (folder / "dispatch" / "manifest.json").write_text(json.dumps(doc))
    original = b"the config's cubin"
    call = SimpleNamespace(name="k", cubin=original)
    found = Found("w" * 16, b"binary for small", {"moves": "hoist", "score": "0.85"}, True, folder)
    rows = [(256.0,), (512.0,), (8192.0,)]
    config = triton.Config({"BLOCK": 64}, num_warps=4)
    groups, note = _key_groups(call, found, ["n_cols"], rows, 0, False, config)
    return groups, note, original


def test_per_shape_groups_become_one_stored_binary_per_key_group(tmp_path, monkeypatch):
    from reorder.triton.rewrite import tuned_binary

    groups, note, original = _two_group_run(tmp_path, monkeypatch)
    assert note == "2 groups: ..."
    assert [g.values for g in groups] == [((256.0,), (512.0,)), ((8192.0,),)]
    assert [tuned_binary(original, g.tuned) for g in groups] == [b"binary for small", b"binary for wide"]
    for g in groups:
        request, _ = split_options(g.marked.kwargs["ptx_options"])
        assert request == Request("tuned", key=g.tuned)  # the stages hook serves exactly that binary
    assert groups[0].ratios == ("0.8000 [0.7900, 0.8100]", "0.8200 [0.8100, 0.8300]")
    doc = keys.manifest("k", ["n_cols"], groups, note)
    assert doc["gain"] and [g["range"] for g in doc["groups"]] == [[None, 2048], [2049, None]]  # sqrt(512 * 8192)
    assert keys.group_of(doc, (1.0,))["tuned"] == groups[0].tuned
    assert keys.group_of(doc, (2048.0,))["tuned"] == groups[0].tuned
    assert keys.group_of(doc, (2049.0,))["tuned"] == groups[1].tuned
    assert keys.group_of(doc, (1e9,))["tuned"] == groups[1].tuned  # unseen beyond the last: the nearest group


def test_the_autotuners_pruning_keeps_the_twin_of_the_launchs_key_group(tmp_path, monkeypatch):
    groups, note, _ = _two_group_run(tmp_path, monkeypatch)
    path = keys.write_manifest(tmp_path / "dispatch", keys.manifest("k", ["n_cols"], groups, note), {})
    config = triton.Config({"BLOCK": 64}, num_warps=4)
    row = TunedConfig(
        "BLOCK64", "k", "w", True, "", True, "", "", tmp_path, config, groups[0].marked, "", tuple(groups), path
    )
    result = TuneResult([row])
    assert result.configs == [config, groups[0].marked, groups[1].marked]
    other = triton.Config({"BLOCK": 128}, num_warps=4)  # a config of the user's, not tuned: kept as it is
    prune = result.dispatch()["early_config_prune"]
    assert prune([*result.configs, other], {"n_cols": 300}) == [config, groups[0].marked, other]
    assert prune(result.configs, {"n_cols": 4096}) == [config, groups[1].marked]
    assert prune(result.configs, {"n_cols": None}) == [config]  # no number to key on: the plain build
    assert "prefetch:2" in result.table() and "8192" in result.table()


def test_groups_not_contiguous_in_key_order_dispatch_to_the_nearest_measured_value():
    a = keys.KeyGroup(((16.0,), (4096.0,)), "a", {}, "hoist", "k.0.cubin")
    b = keys.KeyGroup(((256.0,),), "b", {}, "reuse", "k.1.cubin")
    doc = keys.manifest("k", ["M"], [a, b], "")
    assert [g["range"] for g in doc["groups"]] == [None, None]
    assert keys.group_of(doc, (20.0,))["tuned"] == "a" and keys.group_of(doc, (300.0,))["tuned"] == "b"
    two = keys.manifest("k", ["M", "N"], [keys.KeyGroup(((16.0, 64.0),), "a", {}, "", "x")], "")
    assert two["key"] == ["param M", "param N"] and keys.group_of(two, (1.0, 1.0))["tuned"] == "a"


def test_bad_key_values_are_refused_in_one_line(triton_env):
    from reorder.triton.tune import tune

    values = {"x_ptr": object(), "n_cols": 4096, "flag": True}
    with pytest.raises(InputError, match=r"^launch 2: key 'x_ptr' is object .*int or float") as exc:
        keys.key_values(["x_ptr"], values, "launch 2")
    assert "\n" not in str(exc.value)
    with pytest.raises(InputError, match=r"^launch 1: key 'rows' is not a parameter of the kernel"):
        keys.key_values(["rows"], values, "launch 1")
    with pytest.raises(InputError, match="key 'flag' is bool"):
        keys.key_values(["flag"], values, "launch 1")
    with pytest.raises(InputError, match=r"^launches 1 and 2 have the same key values \(n_cols=4096\)"):
        keys.check_keys(["n_cols"], [(4096.0,), (4096.0,)])
    case, args = _rms(16, 4096)
    shared = dict(configs=[{"num_warps": 4}], arch=90, device="cpu", **case.constexprs)
    with pytest.raises(InputError, match="not both"):
        tune(case.kernel, *args, grid=case.grid, key=["n_cols"], launches=[(args, case.grid)], **shared)
    with pytest.raises(InputError, match=r"^weights: 1 given for 2 launches"):
        tune(case.kernel, key=["n_cols"], launches=[(args, case.grid)] * 2, weights=[1], **shared)
    with pytest.raises(InputError, match=r"^launches\[0\]: dict"):
        tune(case.kernel, key=["n_cols"], launches=[{"args": args}], **shared)
    with pytest.raises(InputError, match=r"^launch 1: key 'x_ptr' is StandInTensor"):
        tune(case.kernel, key=["x_ptr"], launches=[(args, case.grid)], folder=triton_env / "t", **shared)
    with pytest.raises(InputError, match="have the same key values"):
        tune(case.kernel, key=["n_cols"], launches=[(args, case.grid)] * 2, folder=triton_env / "t", **shared)
    for setting, words in (({"budget": 0}, "budget=0"), ({"seconds": -1}, "seconds=-1"), ({"l2": "hot"}, "l2='hot'")):
        with pytest.raises(InputError, match=r"^rt.tune: " + words):
            tune(case.kernel, *args, grid=case.grid, **shared, **setting)
    assert marked_config({"num_warps": 4}, Request()) == {"num_warps": 4, "ptx_options": "--reorder"}


def test_triton_autotune_takes_the_dispatch_as_its_pruning(tmp_path, monkeypatch):
    """Through Triton's own Autotuner: its prune_configs calls the dispatch with the launch's arguments."""
    groups, note, _ = _two_group_run(tmp_path, monkeypatch)
    path = keys.write_manifest(tmp_path / "dispatch", keys.manifest("k", ["n_cols"], groups, note), {})
    config = triton.Config({"BLOCK": 64}, num_warps=4)
    row = TunedConfig(
        "BLOCK64", "k", "w", True, "", True, "", "", tmp_path, config, groups[0].marked, "", tuple(groups), path
    )
    result = TuneResult([row])
    case, _ = _rms(16, 4096)
    tuner = triton.autotune(result.configs, key=["n_cols"], prune_configs_by=result.dispatch())(case.kernel)
    tuner.nargs = {"n_cols": 9000}
    assert tuner.prune_configs({}) == [config, groups[1].marked]


def test_key_values_triton_specializes_apart_get_a_search_each(triton_env):
    """n_cols = 1 is a constexpr to Triton (another cubin): its own search, its own group."""
    from reorder.triton.tune import tune

    one, one_args = _rms(16, 1)
    many, many_args = _rms(16, 4096)
    result = tune(
        one.kernel,
        key=["n_cols"],
        launches=[(one_args, one.grid), (many_args, many.grid)],
        configs=[{"num_warps": 4}],
        budget=1,
        arch=90,
        device="cpu",
        outputs=one.outputs,
        folder=triton_env / "tune",
        **one.constexprs,
    )
    (row,) = result.rows
    assert sorted(p.name for p in row.folder.glob("cubin*/*.toml")) == ["n_cols1.toml", "n_cols4096.toml"]
    doc = json.loads(row.manifest.read_text())
    assert len(doc["groups"]) == 2 and [g["shapes"][0]["key"] for g in doc["groups"]] == [[1.0], [4096.0]]
    assert len(result.configs) == 3  # the original and one twin per cubin's binary
    from reorder.triton.rewrite import rewrite

    ones = (row.folder / "cubin0" / "original.cubin").read_bytes()
    other = rewrite(ones, Request("tuned", key=doc["groups"][1]["tuned"]))  # a 1 sent to the 4096 group
    assert other.data == ones and not other.changed and "compiler's cubin is kept" in other.note  # the plain build
