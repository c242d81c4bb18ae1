"""The fuzzer's cases: which inputs it mutates, how a mutant index becomes a mutated input and
the commands that read it (Planner), and how one case is run in-process and classified
(run_case, classify: exit codes, one error line, corrupt-by-construction inputs refused,
nothing left half-written). The pool of workers, the tally and the reports: benchmarks.fuzz.
"""

from __future__ import annotations

import contextlib
import io
import random
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KERNELS = ROOT / "benchmarks" / "kernels"
# (cubin, launch spec of one of its kernels or None): small and large, sm_80 and sm_90, with CALLs
CUBINS = (
    ("cubin/gather_histogram.cubin", "specs/gather_histogram.toml"),
    ("cubin/rmsnorm.cubin", "specs/rmsnorm_triton_style.toml"),
    ("cubin/spmv_csr.cubin", "specs/spmv_csr_vector.toml"),
    ("cubin/particlefilter.cubin", "specs/normalize_weights.toml"),
    ("../../tests/corpus/cubin/sm_80/elementwise.cubin", None),
    ("../../tests/corpus/cubin/sm_90/calls.cubin", None),
    ("../../tests/corpus/cubin/sm_90/control.cubin", None),
    ("structs/cubin/kselect_tensor.cubin", "structs/specs/warp_select_tensor_k32.toml"),
    ("structs/cubin/cfo_ta_descr.cubin", "structs/specs/cfo_ta_descr.toml"),
    ("structs/cubin/last_block.cubin", "structs/specs/last_block_sum_zeros.toml"),
)
# struct-parameter kernels (C++ names, [[type]], descriptor [[buffer]]s, zeros counters)
STRUCTS = tuple((c, s) for c, s in CUBINS if c.startswith("structs/"))
PTX = ("../../tests/corpus/ptx/sm_90/elementwise.ptx", "../../tests/corpus/triton/sm_90/rmsnorm.ptx")
# cubin, spec, struct, name, ptx: random mutations (fuzz_inputs); elf, nvinfo, dtype: structure-aware
# ones that break one rule of the reader on purpose (fuzz_structure), refused or a failure
FAMILY_WEIGHTS = (
    ("cubin", 0.34),
    ("spec", 0.13),
    ("struct", 0.08),
    ("name", 0.06),
    ("ptx", 0.05),
    ("elf", 0.16),
    ("nvinfo", 0.12),
    ("dtype", 0.06),
)
STRUCTURED = ("elf", "nvinfo", "dtype")
# Commands that transform a kernel (stalls, batch-loads, optimize) run only on bases whose kernels
# have at most this many instructions: on the 5,696 of warpSelect<..., 128, 4, 128> an unmutated
# `reorder stalls` takes 34 s of CPU (80 s before the verifier's incremental checks), past the
# hang bound for reasons no mutation causes.
MAX_TRANSFORMED = 1000
# optimize's options in every case: one trial, a short search, and no pruning rounds (on
# cfo_ta_descr's 688 instructions they took 34 s after a 4 s search: past the hang bound for
# reasons no mutation causes; the rounds read no input)
OPTIMIZE = ("--device", "cpu", "--budget", "1", "--jobs", "1", "--time", "10s", "--no-contributions")
DRAW_LIMIT_BYTES = 96 * 2**20  # specs that validate are drawn (and their structs built) when no larger than this


@dataclass(frozen=True)
class Case:
    mutant: int
    family: str
    kind: str  # the mutation
    base: str
    command: str
    argv: tuple[str, ...]
    corrupt: bool = False  # broken on purpose: the command must refuse it (exit 2, one line)


def weighted(families: tuple[str, ...]) -> list[tuple[str, float]]:
    """(family, weight) for entries `name` (its default weight) or `name=weight` (--mix)."""
    defaults = dict(FAMILY_WEIGHTS)
    out = []
    for entry in families:
        name, _, weight = entry.partition("=")
        if name not in defaults:
            raise ValueError(f"unknown input family {name!r} (families: {', '.join(defaults)})")
        out.append((name, float(weight) if weight else defaults[name]))
    return out


def mixed(families: tuple[str, ...], mix: str | None) -> tuple[str, ...]:
    """The families this machine runs, weighted as `--mix name=w,...` says (others left out)."""
    if not mix:
        return families
    asked = dict(entry.partition("=")[::2] for entry in mix.split(","))
    weighted(tuple(f"{n}={w}" for n, w in asked.items()))  # unknown names and bad weights refused
    return tuple(f"{name}={asked[name]}" for name in families if name in asked)


# ---------------------------------------------------------------- the plan: mutant index -> cases


class Planner:
    """Turns (seed, mutant index) into the mutant's bytes and its cases; the same everywhere."""

    def __init__(self, seed: int, work: Path, families: tuple[str, ...] = tuple(f for f, _ in FAMILY_WEIGHTS)) -> None:
        from benchmarks.fuzz_inputs import Base, cubin_base

        self.seed, self.work = seed, work
        self.weights = weighted(families)
        self.cubins = [(cubin_base(c, (KERNELS / c).read_bytes()), (KERNELS / s) if s else None) for c, s in CUBINS]
        self.specs = [(KERNELS / c, Base(s, (KERNELS / s).read_bytes())) for c, s in CUBINS if s]
        self.structs = [(KERNELS / c, Base(s, (KERNELS / s).read_bytes())) for c, s in STRUCTS]
        self.ptx = [Base(p, (KERNELS / p).read_bytes()) for p in PTX]
        self._names: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}

    def cases(self, index: int) -> tuple[Path, list[Case]]:
        """Write mutant `index` into its folder; its cases."""
        rng = random.Random(f"{self.seed}/{index}")
        family = rng.choices([f for f, _ in self.weights], [w for _, w in self.weights])[0]
        folder = self.work / f"m{index}"
        folder.mkdir(parents=True, exist_ok=True)
        return folder, getattr(self, f"_{family}")(index, rng, folder)

    def _cubin(self, index: int, rng: random.Random, folder: Path) -> list[Case]:
        from benchmarks.fuzz_inputs import CUBIN_MUTATIONS

        base, spec = rng.choice(self.cubins)
        kind = rng.choice(sorted(CUBIN_MUTATIONS))
        return self._cubin_cases(index, rng, folder, "cubin", kind, base, spec, CUBIN_MUTATIONS[kind](base, rng))

    def _elf(self, index: int, rng: random.Random, folder: Path) -> list[Case]:
        """Section headers and symbols broken on purpose: every command must refuse the file."""
        from benchmarks.fuzz_structure import ELF_MUTATIONS

        base, spec = rng.choice(self.cubins)
        kind, data = ELF_MUTATIONS[rng.choice(sorted(ELF_MUTATIONS))](base, rng)
        return self._cubin_cases(index, rng, folder, "elf", kind, base, spec, data, corrupt=True)

    def _nvinfo(self, index: int, rng: random.Random, folder: Path) -> list[Case]:
        """.nv.info records broken on purpose: every command must refuse the file."""
        from benchmarks.fuzz_structure import NVINFO_MUTATIONS

        base, spec = rng.choice(self.cubins)
        kind, data = NVINFO_MUTATIONS[rng.choice(sorted(NVINFO_MUTATIONS))](base, rng)
        return self._cubin_cases(index, rng, folder, "nvinfo", kind, base, spec, data, corrupt=True)

    def _dtype(self, index: int, rng: random.Random, folder: Path) -> list[Case]:
        """A spec with a dtype CuPy cannot draw, a field type nobody declared, or over the size
        limit: check, time, probe and optimize must refuse it."""
        from benchmarks.fuzz_structure import spec_dtype

        return self._spec_cases(
            index, rng, folder, "dtype", self.specs, spec_dtype, probe=0.1, optimize=0.05, corrupt=True
        )

    def _cubin_cases(
        self, index, rng, folder: Path, family: str, kind: str, base, spec, data: bytes, corrupt: bool = False
    ) -> list[Case]:
        """A mutated cubin through every command that reads it (the transforming ones at odds;
        ten times the odds for a corrupt one, which every command refuses at once)."""
        path = folder / "m.cubin"
        path.write_bytes(data)
        original = str(KERNELS / base.name)
        m, out = str(path), str(folder / "out.cubin")
        runs = [
            ("disasm", m),
            ("disasm", m, "--json"),
            ("verify", m),
            ("verify", m, "--against", original),
            ("diff", original, m),
        ]
        runs += [("check", original, m, "--launch", str(spec))] if spec else []
        small = _small(base)
        # a command that transforms one kernel needs it named on a cubin of several: the base's first
        k = ("--kernel", next(k.name for k in base.cubin.kernels if k.is_entry))
        odds = 10 if corrupt else 1
        runs += [("stalls", m, "-o", out, *k)] if small and rng.random() < 0.12 else []
        runs += [("batch-loads", m, "-o", out, "--no-slices", *k)] if small and rng.random() < 0.04 * odds else []
        runs += [("batch-loads", "--assume-noalias", m, "-o", out, *k)] if small and rng.random() < 0.01 * odds else []
        runs += (
            [("prefetch", "--assume-noalias", m, "-o", out, "--iterations", "4", *k)]
            if rng.random() < 0.03 * odds
            else []
        )
        runs += [("optimize", m, "-o", out, *OPTIMIZE, *k)] if small and rng.random() < 0.003 * odds else []
        return [Case(index, family, kind, base.name, r[0], r, corrupt) for r in runs]

    def _spec(self, index: int, rng: random.Random, folder: Path) -> list[Case]:
        from benchmarks.fuzz_inputs import spec_mutation

        return self._spec_cases(index, rng, folder, "spec", self.specs, spec_mutation, probe=0.05, optimize=0.005)

    def _struct(self, index: int, rng: random.Random, folder: Path) -> list[Case]:
        from benchmarks.fuzz_inputs import struct_spec_mutation

        return self._spec_cases(
            index, rng, folder, "struct", self.structs, struct_spec_mutation, probe=0.03, optimize=0.01
        )

    def _spec_cases(
        self,
        index: int,
        rng: random.Random,
        folder: Path,
        family: str,
        bases,
        mutate,
        probe: float,
        optimize: float,
        corrupt: bool = False,
    ) -> list[Case]:
        """A mutated launch spec (flat or struct) of one base, through check and time always,
        probe and optimize with the given odds."""
        cubin, base = rng.choice(bases)
        kind, text = mutate(base, rng)
        path = folder / "spec.toml"
        path.write_bytes(text)
        c, s = str(cubin), str(path)
        runs = [("check", c, c, "--launch", s), ("time", c, c, "--launch", s)]
        runs += (
            [("probe", c, "--launch", s, "--build-only", str(folder / "probe"), "--range", "0-20")]
            if rng.random() < probe
            else []
        )
        runs += (
            [("optimize", c, "-o", str(folder / "out.cubin"), "--launch", s, *OPTIMIZE)]
            if rng.random() < optimize and self._small_path(cubin)
            else []
        )
        return [Case(index, family, kind, base.name, r[0], r, corrupt) for r in runs]

    def _name(self, index: int, rng: random.Random, folder: Path) -> list[Case]:
        """Unmutated cubins, C++ (struct kernels, twice as often) or plain, named every way."""
        from benchmarks.fuzz_inputs import name_query

        base, spec = rng.choice(self.cubins + [x for x in self.cubins if x[0].name.startswith("structs/")])
        kind, query = name_query(*self._symbols(base), rng)
        flag = ("--kernel", query) if rng.random() < 0.7 else (f"--kernel={query}",)
        c, out = str(KERNELS / base.name), str(folder / "out.cubin")
        runs = [("disasm", c, *flag), ("verify", c, *flag), ("diff", c, c, *flag)]
        runs += (
            [("check", c, c, "--launch", str(spec), *flag), ("time", c, c, "--launch", str(spec), *flag)]
            if spec
            else []
        )
        small = _small(base)
        runs += [("stalls", c, "-o", out, *flag)] if small and rng.random() < 0.1 else []
        runs += [("optimize", c, "-o", out, *OPTIMIZE, *flag)] if small and rng.random() < 0.01 else []
        return [Case(index, "name", kind, base.name, r[0], r) for r in runs]

    def _small_path(self, cubin: Path) -> bool:
        """Whether optimize may run on this cubin within the hang bound (MAX_TRANSFORMED): the
        spec and struct families drew it on kselect_tensor too, where one unmutated trial takes
        66 s of CPU (seed 6 counted it as a hang)."""
        return _small(next(b for b, _ in self.cubins if KERNELS / b.name == cubin))

    def _symbols(self, base) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(symbols, demangled) of a base cubin's kernels, asked once."""
        from reorder.binary.names import demangle

        if base.name not in self._names:
            symbols = tuple(k.name for k in base.cubin.kernels)
            self._names[base.name] = (symbols, demangle(symbols))
        return self._names[base.name]

    def _ptx(self, index: int, rng: random.Random, folder: Path) -> list[Case]:
        from benchmarks.fuzz_inputs import ptx_mutation

        base = rng.choice(self.ptx)
        kind, text = ptx_mutation(base, rng)
        path = folder / "m.ptx"
        path.write_bytes(text)
        m = str(path)
        runs = [("disasm", m), ("verify", m)]
        runs += [("stalls", m, "-o", str(folder / "out.cubin"))] if rng.random() < 0.1 else []
        return [Case(index, "ptx", kind, base.name, r[0], r) for r in runs]


# ---------------------------------------------------------------- one case, in a worker


def run_case(case: Case) -> dict:
    """Run one case through `reorder.cli.main.main` here and classify what it did."""
    from reorder.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    start = time.monotonic()
    detail = ""
    written = _clear_outputs(case)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(case.argv))
    except SystemExit as exc:  # argparse refusing the arguments
        code = exc.code if isinstance(exc.code, int) else 2
    except BaseException as exc:  # noqa: BLE001 - an escaped exception is what the fuzzer counts
        import traceback

        code, detail = None, "".join(traceback.format_exception(exc))[-2000:]
    outcome = classify(case, code, out.getvalue(), err.getvalue()) if code is not None else "traceback"
    if (
        outcome in ("refused", "verdict", "no-gpu")
        and case.family in ("spec", "struct", "name")
        and case.command == "check"
    ):
        outcome = _drawn(case) or outcome
    if outcome not in ("traceback", "hang", "signal"):
        outcome = _left_behind(written, code) or outcome
    stderr = err.getvalue()
    return {
        **asdict(case),
        "exit": code,
        "outcome": outcome,
        "seconds": round(time.monotonic() - start, 3),
        "stderr": (detail or stderr)[-600:],
    }


def classify(case: Case, code: int, stdout: str, stderr: str) -> str:
    if "Traceback (most recent call last)" in stderr:
        return "traceback"
    if case.corrupt:  # broken on purpose: exit 2 with one line, or a failure
        one = len([x for x in stderr.strip().splitlines() if "error" in x.lower()]) == 1
        return "refused" if code == 2 and one else "messy" if code == 2 else "accepted_corrupt"
    if code == 0:
        wrote = "-o" in case.argv and Path(case.argv[case.argv.index("-o") + 1]).is_file()
        return "ok" if (stdout.strip() or wrote or "--build-only" in case.argv) else "empty"
    if code == 1:
        return "verdict"
    if code in (2, 4):
        errors = [line for line in stderr.strip().splitlines() if "error" in line.lower()]
        return ("refused" if code == 2 else "no-gpu") if len(errors) == 1 else "messy"
    return f"exit{code}"


def _written_by(case: Case) -> list[Path]:
    """What a case may write: its -o file (with optimize's folder beside it) and its
    --build-only folder."""
    argv = list(case.argv)
    paths = []
    if "-o" in argv:
        target = Path(argv[argv.index("-o") + 1])
        paths += [target, target.with_name(target.stem + ".reorder")]
    if "--build-only" in argv:
        paths.append(Path(argv[argv.index("--build-only") + 1]))
    return paths


def _beside(paths: list[Path]) -> list[Path]:
    """Each path with the files beside it whose names extend its own (out.cubin.provenance.json)."""
    out = []
    for path in paths:
        out += [p for p in path.parent.glob(glob_escape(path.name) + "*") if not p.name.startswith(".")]
    return out or paths


def glob_escape(name: str) -> str:
    return "".join(f"[{c}]" if c in "*?[" else c for c in name)


def _clear_outputs(case: Case) -> list[Path]:
    """Remove what an earlier case of the mutant wrote where this one writes; those paths."""
    paths = _written_by(case)
    for path in _beside(paths):
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        elif path.exists():
            path.unlink()
    return paths


def _left_behind(paths: list[Path], code: int | None) -> str:
    """'half_written' when a command that did not succeed left an output, or any command left a
    temporary file beside one (write_atomic's `.NAME.*.tmp`); else ''."""
    for folder in {p.parent for p in paths}:
        if any(
            x.name.startswith(".") and (x.name.endswith(".tmp") or ".building" in x.name) for x in folder.rglob(".*")
        ):
            return "half_written"
    if code not in (0, None) and any(p.is_file() or (p.is_dir() and any(p.iterdir())) for p in _beside(paths)):
        return "half_written"
    return _running_left(paths)


def _running_left(paths: list[Path]) -> str:
    """'running_left' when a study a case wrote holds a trial still RUNNING after the command
    ended (a run that leaves one reads as a search still going); else ''."""
    import sqlite3

    for folder in paths:
        db = folder / "study.db"
        if not db.is_file():
            continue
        try:
            with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as con:
                running = con.execute("SELECT COUNT(*) FROM trials WHERE state = 'RUNNING'").fetchone()[0]
        except sqlite3.Error:
            continue  # no tables: a study that never got its schema (half_written catches what is left)
        if running:
            return "running_left"
    return ""


def _drawn(case: Case) -> str:
    """'' when the spec is refused or its inputs can be drawn (and its structs built);
    'undrawable' when a spec the CLI accepted raises anything but a ReorderError while its
    inputs are drawn, its struct buffers and parameters packed or its zeros copies made."""
    from reorder.base.errors import ReorderError
    from timing.cli_support import validated_spec
    from timing.inputs import draw_inputs

    kernel = next((a.split("=", 1)[1] for a in case.argv if a.startswith("--kernel=")), None)
    if "--kernel" in case.argv:
        kernel = case.argv[case.argv.index("--kernel") + 1]
    try:
        spec = validated_spec(case.argv[4], [case.argv[1]], kernel)
    except ReorderError:
        return ""
    if sum(p.nbytes for p in spec.buffers) > DRAW_LIMIT_BYTES:
        return ""
    try:
        _materialize(spec, draw_inputs(spec, 0))
    except ReorderError:
        return ""
    except Exception:  # noqa: BLE001
        return "undrawable"
    return ""


def _materialize(spec, host: dict) -> None:
    """What the GPU worker does with drawn inputs before a launch, on a host-memory stand-in
    for cupy (tests/fake_device.py): struct buffers filled, struct parameters packed with
    the buffers' addresses, per-launch copies of zeros counters."""
    if not (spec.types or spec.extra):
        return
    import numpy as np

    from tests import fake_device
    from timing.devicestructs import build_structs, launch_copies
    from timing.gpu import DeviceSet

    try:
        dev = DeviceSet({k: fake_device.array(v) if isinstance(v, np.ndarray) else v for k, v in host.items()})
        build_structs(fake_device, spec, dev)
        launch_copies(fake_device, spec, dev, 3)
    finally:
        fake_device.ALLOCATIONS.clear()


def _small(base) -> bool:
    return max(len(k.text) for k in base.cubin.kernels) <= 16 * MAX_TRANSFORMED
