"""The layering of docs/architecture.md, enforced: `lint-imports` with the contracts in
pyproject.toml (each layer imports only the layers below it; no import cycle between the
modules or subpackages of one package, function-level imports included), and every module
of reorder/ and legality/ placed in a layer, so a new folder cannot slip past the contract."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]


def test_lint_imports_keeps_every_contract() -> None:
    code = "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(no_cache=True, no_logo=True))"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "BROKEN" not in done.stdout and done.stdout.count("KEPT") == len(CONFIG["contracts"])


def _layered() -> set[str]:
    layers = next(c for c in CONFIG["contracts"] if c["type"] == "layers")["layers"]
    return {m.strip() for layer in layers for m in layer.replace("|", ":").split(":")}


def _covered(module: str, layered: set[str]) -> bool:
    return any(module == m or module.startswith(m + ".") for m in layered)


def test_every_module_of_the_product_is_in_a_layer() -> None:
    layered = _layered()
    modules = []
    for package in ("reorder", "legality"):
        for path in sorted((ROOT / package).iterdir()):
            if path.name.startswith(("_", ".")) or path.name in ("tables",):
                continue
            if path.suffix == ".py" or (path / "__init__.py").is_file():
                modules.append(f"{package}.{path.stem}")
    assert modules and not [m for m in modules if not _covered(m, layered)]
    assert _covered("reorder.sass.model", layered) and not _covered("reorder.sassy", layered)


def test_every_module_of_reorder_ptx_is_in_a_room() -> None:
    """reorder/ptx holds its rooms only: a module dropped at its top, or a room the contract
    does not layer, would sit outside the order of the rooms."""
    contract = next(c for c in CONFIG["contracts"] if c.get("containers") == ["reorder.ptx"])
    rooms = {m.strip() for layer in contract["layers"] for m in layer.replace("|", ":").split(":")}
    here = {p.stem for p in (ROOT / "reorder" / "ptx").iterdir() if not p.name.startswith(("_", "."))}
    assert rooms == {"space", "moves", "analyses", "model", "toolchain"}
    assert here == rooms, here ^ rooms
    assert all((ROOT / "reorder" / "ptx" / room / "__init__.py").is_file() for room in rooms)
