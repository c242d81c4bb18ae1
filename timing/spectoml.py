"""A LaunchSpec written back as the TOML a spec file holds, every form included.

Specs built in code (timing.launch.Spec, reorder.triton.launch) are handed to the CLI as
files: `parse_spec(spec_dict(s)) == s`, and `spec_toml(s)` is that dict as text.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from timing.layout import POINTER, FieldValue, Pointer
from timing.params import StructBuffer
from timing.spec import BufferParam, LaunchSpec, ScalarParam, StructParam


def pointer_value(ptr: Pointer) -> Any:
    """A pointer as a spec writes it: a buffer name, a {buffer, index} table, or 0."""
    if ptr.buffer is None:
        return 0
    return ptr.buffer if ptr.index == 0 else {"buffer": ptr.buffer, "index": ptr.index}


def value_dict(value: FieldValue) -> Any:
    """A frozen struct/array/pointer value as plain TOML data (field order kept)."""
    if isinstance(value, Pointer):
        return pointer_value(value)
    if isinstance(value, tuple):
        if value and all(isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], str) for v in value):
            return {name: value_dict(v) for name, v in value}
        return [value_dict(v) for v in value]
    return value


def _buffer_entry(p: BufferParam, kind: bool) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": p.name, "kind": "buffer"} if kind else {"name": p.name}
    entry.update({"dtype": p.dtype, "shape": list(p.shape), "role": p.role})
    if p.init is not None:
        entry["init"] = {"dist": p.init.dist, **dict(p.init.args)}
    return entry


def spec_dict(spec: LaunchSpec) -> dict[str, Any]:
    """The spec as the dict a TOML spec file parses to."""
    kernel: dict[str, Any] = {
        "name": spec.name,
        "grid": list(spec.grid),
        "block": list(spec.block),
        "shared": spec.shared,
        "seed": spec.seed,
    }
    if spec.hook is not None:
        kernel["hook"] = spec.hook
    out: dict[str, Any] = {"kernel": kernel}
    if spec.types:
        out["type"] = [
            {
                "name": t.name,
                "fields": [
                    {"name": f.name, "type": f.type, **({"count": f.count} if f.count > 1 else {})} for f in t.fields
                ],
            }
            for t in spec.types
        ]
    params = []
    for p in spec.params:
        if isinstance(p, ScalarParam):
            params.append({"name": p.name, "kind": "scalar", "dtype": p.dtype, "value": p.value})
        elif isinstance(p, StructParam):
            params.append({"name": p.name, "kind": "struct", "type": p.type, "value": value_dict(p.value)})
        else:
            params.append(_buffer_entry(p, kind=True))
    out["param"] = params
    if spec.extra:
        out["buffer"] = [
            {"name": b.name, "type": b.type, "values": [value_dict(v) for v in b.values]}
            if isinstance(b, StructBuffer)
            else _buffer_entry(b, kind=False)
            for b in spec.extra
        ]
    return out


def toml_value(value: Any) -> str:
    """One TOML value (inline tables and arrays on one line)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a TOML basic string takes JSON's escapes
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"no TOML form for {value!r}")


def _table(header: str, entry: Mapping[str, Any]) -> list[str]:
    lines = ["", header]
    for k, v in entry.items():
        if k in ("fields", "values") and isinstance(v, list):  # one element per line
            lines += [f"{k} = ["] + [f"  {toml_value(item)}," for item in v] + ["]"]
        else:
            lines.append(f"{k} = {toml_value(v)}")
    return lines


def spec_toml(spec: LaunchSpec, header: str = "") -> str:
    """The spec as a launch-spec file (`reorder check/time/optimize --launch`)."""
    raw = spec_dict(spec)
    lines = [f"# {line}" for line in header.splitlines()] + ["[kernel]"]
    lines += [f"{k} = {toml_value(v)}" for k, v in raw["kernel"].items()]
    for key in ("type", "buffer", "param"):
        for entry in raw.get(key, []):
            lines += _table(f"[[{key}]]", entry)
    return "\n".join(lines) + "\n"


__all__ = ["POINTER", "pointer_value", "spec_dict", "spec_toml", "toml_value", "value_dict"]
