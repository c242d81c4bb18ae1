"""The latency tables' fast reader returns tomllib's document or refuses (None): never another one."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomllib

from legality import flat_toml
from legality.latency import read_table
from reorder.ptx.moves import wgmma
from reorder.triton import builds

TABLES = sorted((Path(__file__).resolve().parent.parent / "legality").rglob("*.toml"))


def test_every_generated_table_reads_as_tomllib_reads_it():
    read = 0
    for path in TABLES:
        text = path.read_text()
        fast = flat_toml.loads(text)
        if fast is not None:
            assert fast == tomllib.loads(text), path.name
            read += 1
    assert read >= len(TABLES) - 2  # barriers.toml has plain tables: tomllib's
    assert any(p.name == "ptxas_sm_90.toml" for p in TABLES)


@pytest.mark.parametrize(
    "text",
    [
        "a = 1\na = 2",  # a duplicate key: tomllib refuses it
        'a = "x" # c',  # a comment after a value
        "[t]\na = 1",  # a plain table
        "a = 1\n[[a]]\nb = 2",  # a key that is then an array
        "a = 01",
        'a = "x\\ty"',  # an escape
        "a.b = 1",
        "x = [1]",
        "a = 1\r\nb = 2",
        "a = +1",
        "a = 1.5",
        "[[ x ]]\na = 1",
        "# \x01",  # a control character tomllib refuses
        'a = "\x01"',
        "a=1",
    ],
)
def test_anything_else_is_left_to_tomllib(text):
    assert flat_toml.loads(text) is None


def test_what_it_reads_equals_tomllib():
    text = '# c\n\n[[e]]\na = "x # y"\nb = -0\nc = 0\n[[f]]\n[[e]]\nc = "\u00e9 \u00e9\tz"\nd = -12\n'
    assert flat_toml.loads(text) == tomllib.loads(text)


def test_read_table_is_tomllibs_document(tmp_path, monkeypatch):
    monkeypatch.setenv("REORDER_CACHE", str(tmp_path))
    path = next(p for p in TABLES if p.name == "ptxas_sm_90.toml")
    assert read_table(path) == tomllib.loads(path.read_text())


def test_the_wgmma_step_skips_ptx_without_wgmma():
    """async_wgmma's shortcut names what the wgmma move looks for, and costs no compile."""
    assert builds.MMA == wgmma.MMA

    def never(_text: str) -> bytes:
        raise AssertionError("compiled")

    assert builds.async_wgmma(".version 8.0\n.target sm_90a\n.visible .entry k()\n{\nret;\n}\n", never) is None
