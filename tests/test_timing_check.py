"""Byte-exact comparison (the CPU part of timing.check)."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from timing.check import POISON, CheckResult, Mismatch, compare_outputs, poisoned


def test_identical_is_none() -> None:
    ref = {"y": np.arange(12, dtype=np.float32).reshape(3, 4), "z": np.ones(3, np.int64)}
    cand = {k: v.copy() for k, v in ref.items()}
    assert compare_outputs(ref, cand) is None


def test_planted_mismatch_is_located() -> None:
    ref = {"a": np.zeros(5, np.int32), "y": np.arange(24, dtype=np.float32).reshape(2, 3, 4)}
    cand = {k: v.copy() for k, v in ref.items()}
    cand["y"][1, 2, 3] = 99.0
    cand["y"][1, 2, 2] = -1.0  # earlier in flat order: this one must be reported
    m = compare_outputs(ref, cand)
    assert isinstance(m, Mismatch)
    assert m.buffer == "y"
    assert m.flat_index == 22 and m.index == (1, 2, 2)
    assert m.ref_value == "22.0" and m.cand_value == "-1.0"
    assert m.ref_bytes == struct.pack("<f", 22.0).hex()
    assert m.cand_bytes == struct.pack("<f", -1.0).hex()
    assert m.n_differing == 2
    line = m.describe()
    assert "'y'" in line and "[1, 2, 2]" in line and "\n" not in line


def test_first_buffer_in_ref_order_wins() -> None:
    ref = {"p": np.zeros(3, np.uint8), "q": np.zeros(3, np.uint8)}
    cand = {"q": np.array([0, 0, 1], np.uint8), "p": np.array([0, 2, 0], np.uint8)}
    m = compare_outputs(ref, cand)
    assert m is not None and m.buffer == "p" and m.flat_index == 1


def test_nan_payloads_differ() -> None:
    quiet = np.array([0x7FC00000], np.uint32).view(np.float32)
    payload = np.array([0x7FC00001], np.uint32).view(np.float32)
    assert np.isnan(quiet[0]) and np.isnan(payload[0])
    m = compare_outputs({"y": quiet}, {"y": payload})
    assert m is not None and m.ref_bytes == "0000c07f" and m.cand_bytes == "0100c07f"
    # identical NaNs are equal (np.array_equal would say otherwise)
    assert compare_outputs({"y": quiet}, {"y": quiet.copy()}) is None


def test_signed_zero_differs() -> None:
    m = compare_outputs({"y": np.array([0.0], np.float64)}, {"y": np.array([-0.0], np.float64)})
    assert m is not None and m.index == (0,) and m.cand_bytes.endswith("80")


def test_half_precision_and_scalar_shapes() -> None:
    ref = {"h": np.array([1.0, 2.0], np.float16)}
    cand = {"h": np.array([1.0, 2.001], np.float16)}
    m = compare_outputs(ref, cand)
    assert m is not None and m.flat_index == 1 and len(m.ref_bytes) == 4


def test_structure_mismatch_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="names differ"):
        compare_outputs({"a": np.zeros(1)}, {"b": np.zeros(1)})
    with pytest.raises(ValueError, match="'a'"):
        compare_outputs({"a": np.zeros(2)}, {"a": np.zeros(3)})
    with pytest.raises(ValueError, match="'a'"):
        compare_outputs({"a": np.zeros(2, np.float32)}, {"a": np.zeros(2, np.int32)})


def test_poison_is_all_ff_and_nan() -> None:
    assert POISON == 0xFF
    for dtype in ("float16", "float32", "float64"):
        p = poisoned((3, 2), dtype)
        assert p.shape == (3, 2) and np.isnan(p).all()
        assert set(p.view(np.uint8).ravel().tolist()) == {0xFF}
    assert (poisoned((4,), "int32") == -1).all()


def test_check_result_describe() -> None:
    assert "3 input set" in CheckResult(True, 3).describe()
    assert CheckResult(False, 3, reason="input set 1: boom").describe() == "input set 1: boom"
