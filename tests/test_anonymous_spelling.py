"""A spec written on one machine names an anonymous-namespace kernel on another: c++filt spells
the namespace `(anonymous namespace)`, some cu++filt builds `<unnamed>`; both name one kernel."""

from __future__ import annotations

import pytest

from reorder.binary import names

SYMBOL = "_ZN2at6native52_GLOBAL__N__d18d6de0_19_EmbeddingBag_fwd_cu_a9f7f33c4kernIflEEvPKT0_"
TEMPLATE = "at::native::{ns}::kern<float, long>(long const*)"


@pytest.mark.parametrize("machine", ["(anonymous namespace)", "<unnamed>"])
@pytest.mark.parametrize("spec", ["(anonymous namespace)", "<unnamed>"])
def test_either_spelling_names_the_kernel(monkeypatch, machine: str, spec: str) -> None:
    other = "_Z5otherv"
    monkeypatch.setattr(
        names, "demangle", lambda symbols: tuple(TEMPLATE.format(ns=machine) if s == SYMBOL else s for s in symbols)
    )
    assert names.resolve(TEMPLATE.format(ns=spec), [other, SYMBOL]) == SYMBOL


def test_a_different_kernel_is_still_not_matched(monkeypatch) -> None:
    monkeypatch.setattr(names, "demangle", lambda symbols: tuple(TEMPLATE.format(ns="<unnamed>") for _ in symbols))
    with pytest.raises(names.InputError):
        names.resolve("at::native::(anonymous namespace)::kern<double, long>(long const*)", [SYMBOL])
