"""Input hooks of the struct specs: sizes and scales come from the spec's buffers and structs."""

from __future__ import annotations

import numpy as np

from reorder.suite.inputs import cfo_ta_channel
from timing.spec import LaunchSpec


def cfo_ta_descr_inputs(spec: LaunchSpec, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """The channel estimates H of every UE group, drawn as the flat cfo_ta_est's hook draws
    them (a CFO of up to +-600 Hz, a delay of up to +-1 us), the scales read from group 0's
    parameter struct."""
    shape = spec.param("H").shape  # type: ignore[union-attr]
    groups, layers = shape[0], shape[2]
    first = dict(spec.param("ue_grp_prms").values[0])  # type: ignore[union-attr, arg-type]
    cfo_phase = rng.uniform(-600.0, 600.0, size=(groups, layers)) / float(first["cfoScale"])
    ta_phase = rng.uniform(-1e-6, 1e-6, size=(groups, layers)) / float(first["taScale"])
    return {"H": cfo_ta_channel(shape, cfo_phase, ta_phase, rng)}
