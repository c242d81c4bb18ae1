"""Launch specs that cannot be drawn, or cannot be read in reasonable time, are refused up front in
one line naming the spec and what is wrong: a float128 buffer was accepted by `optimize
--device cpu --launch`, `--check-launch` and `probe --build-only` (CuPy cannot draw one); a
struct field of type float128 was blamed as "struct float128 needs a table of its fields";
a 50 MB TOML took 87 s before it was refused."""

from __future__ import annotations

import resource
import time
from pathlib import Path

import pytest

from reorder.base.errors import SpecError
from reorder.cli.main import main
from timing.params import DTYPES, check_dtype
from timing.spec import MAX_SPEC_BYTES, load_spec

ROOT = Path(__file__).resolve().parent.parent
KERNELS = ROOT / "benchmarks" / "kernels"
CUBIN = KERNELS / "cubin" / "gather_histogram.cubin"
SPEC = KERNELS / "specs" / "gather_histogram.toml"
LAST = KERNELS / "structs" / "cubin" / "last_block.cubin"
LAST_SPEC = KERNELS / "structs" / "specs" / "last_block_sum_zeros.toml"


def _one_line(capsys, code: int, command: str) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith(f"reorder {command}: error: "), err
    assert "Traceback" not in err
    return lines[0]


def _float128_spec(tmp_path: Path) -> Path:
    path = tmp_path / "f128.toml"
    path.write_text(
        SPEC.read_text().replace('dtype = "uint32"\nshape = [4194304]', 'dtype = "float128"\nshape = [4194304]')
    )
    assert "float128" in path.read_text()
    return path


@pytest.mark.parametrize("name", ["float128", "longdouble", "complex64", ">f4", "datetime64", "bfloat16"])
def test_dtypes_cupy_cannot_draw_are_refused_and_the_drawable_ones_named(name: str) -> None:
    with pytest.raises(SpecError) as info:
        check_dtype(name, "s.toml: param 'x'")
    assert repr(name) in str(info.value) and "CuPy" in str(info.value)
    assert all(d in str(info.value) for d in DTYPES)


def test_dtype_aliases_that_name_a_drawable_type_stay_accepted() -> None:
    assert [check_dtype(n, "w") for n in ("f4", "double", "half", "float32", "uint8", "bool")] == [
        "float32",
        "float64",
        "float16",
        "float32",
        "uint8",
        "bool",
    ]


@pytest.mark.parametrize(
    "argv",
    [
        lambda cubin, spec, out: ["check", cubin, cubin, "--launch", spec],
        lambda cubin, spec, out: ["optimize", cubin, "-o", out, "--device", "cpu", "--launch", spec],
        lambda cubin, spec, out: [
            "optimize",
            cubin,
            "-o",
            out,
            "--device",
            "cpu",
            "--launch",
            str(SPEC),
            "--check-launch",
            spec,
        ],
        lambda cubin, spec, out: ["probe", cubin, "--launch", spec, "--build-only", out + ".probe"],
    ],
    ids=["check", "optimize", "check-launch", "probe"],
)
def test_a_float128_buffer_is_refused_by_every_command_before_work(tmp_path: Path, capsys, argv) -> None:
    spec, out = _float128_spec(tmp_path), str(tmp_path / "out.cubin")
    args = argv(str(CUBIN), str(spec), out)
    line = _one_line(capsys, main(args), args[0])
    assert str(spec) in line and "dtype 'float128'" in line and "CuPy" in line
    assert not Path(out).exists() and not Path(out + ".probe").exists()


@pytest.mark.parametrize("ty", ["float128", "nope", "complex64"])
def test_an_unknown_struct_field_type_is_named_as_one(tmp_path: Path, ty: str) -> None:
    text = LAST_SPEC.read_text()
    assert '{ name = "n", type = "int64" }' in text
    path = tmp_path / "s.toml"
    path.write_text(text.replace('{ name = "n", type = "int64" }', f'{{ name = "n", type = "{ty}" }}'))
    with pytest.raises(SpecError) as info:
        load_spec(path)
    message = str(info.value)
    assert f"unknown field type {ty!r}" in message and "[[type]]" in message and "needs a table" not in message


def test_a_50_mb_spec_is_refused_before_it_is_parsed(tmp_path: Path, capsys) -> None:
    big = tmp_path / "big.toml"
    with big.open("w") as handle:
        handle.write(SPEC.read_text())
        line = "# " + "x" * 1000 + "\n"
        for _ in range(50 * 1000):
            handle.write(line)
    assert big.stat().st_size > 50 * 10**6 > MAX_SPEC_BYTES
    before, start = resource.getrusage(resource.RUSAGE_SELF).ru_utime, time.process_time()
    line = _one_line(capsys, main(["check", str(CUBIN), str(CUBIN), "--launch", str(big)]), "check")
    assert str(big) in line and "larger than 1 MiB" in line
    assert time.process_time() - start < 5 and resource.getrusage(resource.RUSAGE_SELF).ru_utime - before < 5
