"""Load the Triton kernels of one of Triton's tutorial files without running the tutorial.

Why not `import` it: a tutorial is a script. At import it asks the active driver for its
torch device (`triton.runtime.driver.active.get_active_torch_device()`, which raises on a host
with no GPU), then runs its unit test and its benchmark. What a study needs from it is only
its kernels: the `@triton.jit` functions, the `@triton.autotune` / `@triton.heuristics`
wrappers around them, and what those reference (config lists, the functions that build or
filter them, pre_hooks, prune functions, the @triton.jit functions they call).

So `load(stem, dev)` parses the file (the upstream text, unchanged, from TUTORIALS_SRC) with
`ast` and executes, in file order and in a fresh module namespace, only

- the top-level `import` / `from ... import` statements (one that fails is skipped), and
- the top-level statements that define a name the kernels need, found by following names
  from every jit-decorated function: its decorators and defaults (statements before it in
  the file, as a module run would have them) and the free names of its body (anywhere in
  the file, as the JIT resolves them when it compiles).

Statements are compiled with the file's own name and line numbers, so `inspect.getsource`
(which the JIT uses) reads the kernels from the upstream file itself. `DEVICE` is never run
from the file: it is the `dev` string given.

On a host with no GPU (`dev="cpu"`: builds for sm_90 on CPU tensors, as the study's CPU check
does), the tutorials' device probes are answered for the study's target, an H200: the
functions `is_cuda`, `is_hip`, `is_hopper`, `supports_tma`, ... get the target's answers, and
`torch.cuda.get_device_capability` / `get_device_properties` (which a config filter may call
directly) answer (9, 0) and 132 SMs. With `dev="cuda"` nothing is replaced: the probes ask the
real device, as the tutorial would.
"""

from __future__ import annotations

import ast
import os
import sys
import types
from typing import Any

SRC = os.environ.get("TUTORIALS_SRC", "/work/main/.gpu/tutorials/src")

# The target a CPU-only host builds for: an H200.
TARGET_CAPABILITY = (9, 0)
TARGET_SMS = 132

_JIT_DECORATORS = {"jit", "autotune", "heuristics"}
_DEFINERS = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Assign,
    ast.AnnAssign,
    ast.AugAssign,
    ast.If,
    ast.Try,
    ast.With,
)
_loaded: dict[tuple[str, str, str], types.ModuleType] = {}


def _probe_answers() -> dict[str, Any]:
    """What a tutorial's device probes answer on the study's target (by function name)."""
    major = TARGET_CAPABILITY[0]
    facts = {
        "is_cuda": True,
        "is_hip": False,
        "is_cdna": False,
        "is_hip_cdna2": False,
        "supports_tma": major >= 9,
        "supports_host_descriptor": major >= 9,
        "supports_ws": major >= 9,
        "is_hopper": major == 9,
        "is_blackwell": major == 10,
        "num_sms": TARGET_SMS,
    }
    return {name: (lambda value=value: value) for name, value in facts.items()}


class _TargetCuda:
    """`torch.cuda` for a host with no GPU: the device queries answer for the target."""

    def __init__(self, real: Any) -> None:
        self._real = real

    def get_device_capability(self, device: Any = None) -> tuple[int, int]:
        return TARGET_CAPABILITY

    def get_device_properties(self, device: Any = None) -> Any:
        return types.SimpleNamespace(
            multi_processor_count=TARGET_SMS,
            major=TARGET_CAPABILITY[0],
            minor=TARGET_CAPABILITY[1],
            name="target sm_90 (no GPU on this host)",
        )

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


class _TargetTorch(types.ModuleType):
    """`torch` with `cuda` replaced by _TargetCuda; everything else is torch's own."""

    def __init__(self, real: Any) -> None:
        super().__init__(real.__name__)
        self._real = real
        self.cuda = _TargetCuda(real.cuda)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def _is_kernel(node: ast.AST) -> bool:
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    for dec in node.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name in _JIT_DECORATORS:
            return True
    return False


def _targets(node: ast.AST) -> set[str]:
    """Top-level names a statement binds (inside if/try/with blocks too)."""
    out: set[str] = set()
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for t in targets:
            out |= {n.id for n in ast.walk(t) if isinstance(n, ast.Name)}
        return out
    for field in ("body", "orelse", "finalbody", "handlers"):
        for child in getattr(node, field, []) or []:
            out |= _targets(child)
    return out


def _loads(nodes: list[ast.AST]) -> set[str]:
    return {n.id for node in nodes for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _needs(node: ast.AST) -> tuple[set[str], set[str]]:
    """(names needed when the statement runs, names needed later: a function body's free names)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        args = node.args
        now = _loads(node.decorator_list + args.defaults + [d for d in args.kw_defaults if d is not None])
        params = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
        params |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
        local = params | {
            n.id for b in node.body for n in ast.walk(b) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
        }
        return now, _loads(node.body) - local
    if isinstance(node, ast.ClassDef):
        return _loads(node.decorator_list + node.bases), _loads(node.body)
    return _loads([node]), set()


def _kept(tree: ast.Module) -> list[int]:
    """Indices of the statements to run: every import, and the closure of the kernels' needs."""
    body = tree.body
    defined: dict[str, list[int]] = {}
    for i, node in enumerate(body):
        if isinstance(node, _DEFINERS):
            for name in _targets(node):
                defined.setdefault(name, []).append(i)
    keep = {i for i, node in enumerate(body) if isinstance(node, (ast.Import, ast.ImportFrom))}
    todo = [i for i, node in enumerate(body) if _is_kernel(node)]
    while todo:
        i = todo.pop()
        if i in keep:
            continue
        keep.add(i)
        now, later = _needs(body[i])
        for name in now:
            todo += [j for j in defined.get(name, ()) if j < i]
        for name in later:
            todo += defined.get(name, [])
    return sorted(keep)


def _is_device_line(node: ast.AST) -> bool:
    return isinstance(node, ast.Assign) and _targets(node) == {"DEVICE"}


def load(stem: str, dev: str = "cuda") -> types.ModuleType:
    """The kernels of tutorial `stem` (e.g. "06-fused-attention") as a module, made for `dev`
    ("cuda": the live device; "cpu": no GPU, probes answered for an H200). Cached per process."""
    path = os.path.join(SRC, stem + ".py")
    cached = _loaded.get((path, stem, dev))
    if cached is not None:
        return cached
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read(), filename=path)
    name = "tutorial_" + stem.replace("-", "_").replace(".", "_") + ("_cpu" if dev == "cpu" else "")
    module = types.ModuleType(name)
    module.__file__ = path
    ns = module.__dict__
    ns["DEVICE"] = dev
    sys.modules[name] = module
    answers = _probe_answers() if dev == "cpu" else {}
    for i in _kept(tree):
        node = tree.body[i]
        if _is_device_line(node):
            continue
        code = compile(ast.Module(body=[node], type_ignores=[]), path, "exec")
        try:
            exec(code, ns)
        except Exception:  # an import the kernels may not need (apex, a profiler)
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                raise
        if dev == "cpu":
            real = sys.modules.get("torch")
            if real is not None and ns.get("torch") is real:
                ns["torch"] = _TargetTorch(real)
            for bound in _targets(node) & set(answers):
                ns[bound] = answers[bound]
    _loaded[(path, stem, dev)] = module
    return module
