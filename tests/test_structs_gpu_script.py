"""benchmarks.structs_build / structs_gpu on the CPU: the GPU script's dry run over a small
manifest (specs resolved to symbols and checked against the cubins, jobs built, tables
written), so the path the H200 takes is walked before it gets there."""

from __future__ import annotations

import csv
import json
import shutil

from benchmarks import structs_build, structs_gpu


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
    done = structs_gpu.run(tmp_path, out, 170.0, 2.0, 2, dry_run=True)
    assert [(r["pair"], r["form"], r["move"]) for r in done] == [
        ("last_block_sum", "zeros", "A/A"),
        ("cfo_ta_est", "flat", "stalls"),
        ("cfo_ta_est", "struct", "stalls"),
    ]
    with open(out / "structs_gpu.csv") as handle:
        assert [r["status"] for r in csv.DictReader(handle)] == ["dry run"] * 3
    table = (out / "structs_gpu.md").read_text()
    assert "| cfo_ta_est | stalls | dry run | dry run |" in table and "zeros ticket" in table


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
    done = structs_gpu.run(tmp_path, tmp_path / "out", 170.0, 2.0, 2, dry_run=True)
    assert [r["status"] for r in done] == ["dry run", "dry run", "same binary as stalls"]
