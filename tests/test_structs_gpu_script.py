"""benchmarks.structs_build / the structs study on the CPU: the runner's dry run over a small
manifest (specs resolved to symbols and checked against the cubins, every job walked with
made-up numbers, tables written), so the path the H200 takes is walked before it gets there."""

from __future__ import annotations

import csv
import json
import shutil

from benchmarks import structs_gpu
from benchmarks.studies import structs_build


def _dry(build, out) -> list[dict]:
    assert structs_gpu.main(["--build", str(build), "--out", str(out), "--dry-run"]) == 0
    with open(out / "structs_gpu.csv") as handle:
        return list(csv.DictReader(handle))


def test_dry_run_pairs_flat_and_struct_rows(tmp_path):
    rows = []
    for side in structs_build.sides(*structs_build.PAIRS[2]):  # cfo_ta_est: flat and descriptor forms
        spec, symbol = structs_build.resolved_spec(side, tmp_path)
        name = f"{side['pair']}_{side['form']}_stalls.cubin"
        shutil.copyfile(side["cubin"], tmp_path / name)
        rows.append(
            {
                "pair": side["pair"],
                "form": side["form"],
                "kernel": symbol,
                "move": "stalls",
                "built": True,
                "original": str(side["cubin"].relative_to(structs_build.ROOT)),
                "spec": str(spec.relative_to(tmp_path)),
                "candidate": name,
            }
        )
    zeros = {
        "pair": "last_block_sum",
        "form": "zeros",
        "spec": structs_build.STRUCTS / "specs" / "last_block_sum_zeros.toml",
        "cubin": structs_build.STRUCTS / "cubin" / "last_block.cubin",
    }
    spec, symbol = structs_build.resolved_spec(zeros, tmp_path)
    (tmp_path / "manifest.json").write_text(
        json.dumps(
            {
                "commit": "test",
                "candidates": rows,
                "zeros": {
                    "kernel": symbol,
                    "original": str(zeros["cubin"].relative_to(structs_build.ROOT)),
                    "spec": str(spec.relative_to(tmp_path)),
                },
            }
        )
    )
    assert "pusch::cfoTaEstDescrKernel" not in (tmp_path / rows[1]["spec"]).read_text()  # the symbol is written
    out = tmp_path / "out"
    done = _dry(tmp_path, out)
    assert [(r["pair"], r["form"], r["move"]) for r in done] == [
        ("last_block_sum", "zeros", "A/A"),
        ("cfo_ta_est", "flat", "stalls"),
        ("cfo_ta_est", "struct", "stalls"),
    ]
    assert [(r["status"], r["check_detail"], r["gpu"]) for r in done] == [("ok", "dry run", "none (dry run)")] * 3
    table = (out / "summary.md").read_text()
    cells = {line.split(" | ")[0]: line.count(" [") for line in table.splitlines() if line.startswith("| ")}
    assert (
        cells["| cfo_ta_est"] == 2 and cells["| last_block_sum"] == 1 and "zeros ticket:" in table
    )  # a ratio [CI] each


def test_a_candidate_with_an_earlier_ones_bytes_is_not_run_twice(tmp_path):
    side = structs_build.sides(*structs_build.PAIRS[2])[0]
    spec, symbol = structs_build.resolved_spec(side, tmp_path)
    rows = []
    for move in ("stalls", "search"):
        shutil.copyfile(side["cubin"], tmp_path / f"{move}.cubin")
        rows.append(
            {
                "pair": side["pair"],
                "form": "flat",
                "kernel": symbol,
                "move": move,
                "built": True,
                "original": str(side["cubin"].relative_to(structs_build.ROOT)),
                "spec": str(spec.relative_to(tmp_path)),
                "candidate": f"{move}.cubin",
            }
        )
    (tmp_path / "manifest.json").write_text(
        json.dumps({"commit": "test", "candidates": rows, "zeros": structs_build._zeros(tmp_path)})
    )
    done = _dry(tmp_path, tmp_path / "out")
    assert [r["status"] for r in done] == ["ok", "ok", "same binary as stalls"]
