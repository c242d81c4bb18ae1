"""The disk cache: an answer is computed once per input, and a cache that cannot be
written costs only the recomputation."""

from __future__ import annotations

from pathlib import Path

import pytest

from reorder.base.diskcache import cached_json, key_of
from reorder.base.errors import ToolError
from reorder.sass import rename

CUBIN = Path(__file__).resolve().parent.parent / "benchmarks" / "kernels" / "cubin" / "rmsnorm.cubin"


def test_computed_once_then_read_back(tmp_path, monkeypatch):
    monkeypatch.setenv("REORDER_CACHE", str(tmp_path))
    calls = []

    def compute():
        calls.append(1)
        return {"answer": [1, 2]}

    key = key_of(b"input", "v1")
    assert cached_json("k", key, compute) == {"answer": [1, 2]}
    assert cached_json("k", key, compute) == {"answer": [1, 2]}
    assert len(calls) == 1
    assert cached_json("k", key_of(b"input", "v2"), compute) and len(calls) == 2  # another version: recomputed
    assert key_of("ab", "c") != key_of("a", "bc")


def test_unwritable_cache_still_answers(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("REORDER_CACHE", str(blocker))
    assert cached_json("k", key_of(b"x"), lambda: [3]) == [3]


def test_nvdisasm_listings_come_back_from_the_cache(tmp_path, monkeypatch):
    from reorder.binary.cubin import read_cubin
    from reorder.sass.model import decode_kernel

    monkeypatch.setenv("REORDER_CACHE", str(tmp_path))
    monkeypatch.setattr("reorder.sass.readback._RAW", {})  # words listed alone by earlier tests
    code = decode_kernel(read_cubin(CUBIN), "rmsnorm_triton_style")
    words = [i.word for i in code.instructions[:24]]
    first = rename.disassemble_guarded(words, code.arch)
    assert [op for _, op, _ in first] == [i.opcode for i in code.instructions[:24]]

    def no_tool(*args, **kwargs):
        raise ToolError("nvdisasm must not run again")

    monkeypatch.setattr("reorder.sass.model.run_tool", no_tool)
    assert rename.disassemble_guarded(words, code.arch) == first
    assert rename.disassemble_guarded(words[:5], code.arch) == first[:5]  # each word listed alone before
    with pytest.raises(ToolError):
        rename.disassemble_guarded([words[0] ^ 1 << 24], code.arch)  # a word never listed: it needs the tool
