"""timing.gpu on the CPU: a cubin is loaded from a copy named by its bytes.

cupy keeps the module of every path it loaded for the life of the process, so a worker that
loaded `fast.cubin` once would run that same code for any later `fast.cubin`. Loading from a
content-named copy makes the module follow the bytes (the GPU half is in
tests/gpu/test_timing_gpu.py)."""

from __future__ import annotations

from pathlib import Path

from timing import gpu


def test_the_same_bytes_share_one_copy_and_other_bytes_get_another(tmp_path: Path) -> None:
    a = gpu.by_content(b"first cubin", tmp_path / "m")
    again = gpu.by_content(b"first cubin", tmp_path / "m")
    b = gpu.by_content(b"second cubin", tmp_path / "m")
    assert a == again and a != b
    assert a.read_bytes() == b"first cubin" and b.read_bytes() == b"second cubin"
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == sorted((a.name, b.name))  # no partial files left


def test_a_file_rewritten_in_place_maps_to_its_new_bytes(tmp_path: Path) -> None:
    path = tmp_path / "fast.cubin"
    path.write_bytes(b"candidate 1")
    one = gpu.by_content(path.read_bytes(), tmp_path / "m")
    path.write_bytes(b"candidate 2")
    two = gpu.by_content(path.read_bytes(), tmp_path / "m")
    assert one != two and two.read_bytes() == b"candidate 2"


def test_each_process_has_its_own_folder() -> None:
    import os

    assert gpu.loaded_modules_dir().name.endswith(f"-{os.getpid()}")
