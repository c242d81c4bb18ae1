"""Subcommand handlers of the `reorder` CLI (argument wiring only; the work lives elsewhere)."""

from __future__ import annotations

import argparse
import sys

from reorder.base.files import check_output
from reorder.binary.cubin import read_cubin
from reorder.cli.kernelpick import pick_kernel
from reorder.cli.lastline import listed, outcome_line, plural
from reorder.cli.registry import command, seconds
from reorder.sass.listing import render_json, render_text
from reorder.sass.model import decode_kernel


def kernel_name(text: str) -> str:
    """--kernel's value: an empty name would read as no --kernel at all (every kernel), which
    is what `--kernel "$K"` with K unset should not silently do."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty name names no kernel (leave --kernel out for every kernel)")
    return text


@command("disasm", "annotated SASS: control codes, read/write sets")
def _disasm():
    def add(p: argparse.ArgumentParser) -> None:
        p.add_argument("cubin")
        p.add_argument("--kernel", type=kernel_name, help="kernel name (default: every kernel)")
        p.add_argument("--json", action="store_true", help="records with offset, opcode, text and control fields")

    def run(args: argparse.Namespace) -> int:
        cubin = read_cubin(args.cubin)
        names = [args.kernel] if args.kernel else [k.name for k in cubin.kernels]
        codes = [decode_kernel(cubin, n) for n in names]
        print(render_json(codes) if args.json else "\n\n".join(render_text(c) for c in codes))
        count = sum(len(c.instructions) for c in codes)
        listed("disasm", f"{plural(len(codes), 'kernel')}, {plural(count, 'instruction')} listed")
        return 0

    return run, add


@command("verify", "prove or reject a schedule: exit 0 legal, 1 with a report of violations or what cannot be judged")
def _verify():
    from reorder.cli import verify as verify_command

    return verify_command.run, lambda p: verify_command.add_arguments(p, kernel_name)


@command("diff", "what B changed against A: SASS with control codes, moved/recoded/rewritten counts, stalls")
def _diff():
    def add(p: argparse.ArgumentParser) -> None:
        p.add_argument("a", metavar="A.cubin", help="the original")
        p.add_argument("b", metavar="B.cubin", help="the candidate (a reorder output)")
        p.add_argument("--kernel", type=kernel_name, help="kernel name (default: every kernel both have)")
        p.add_argument("--context", type=int, default=3, help="unchanged lines around each change (default 3)")

    def run(args: argparse.Namespace) -> int:
        from reorder.base.errors import InputError
        from reorder.report.sassdiff import sass_diff

        a, b = read_cubin(args.a), read_cubin(args.b)
        names = [args.kernel] if args.kernel else [k.name for k in a.kernels if k.name in {x.name for x in b.kernels}]
        if not names:
            raise InputError(f"{args.a} and {args.b} have no kernel in common")
        if args.context < 0:
            raise InputError("--context must be 0 or more")
        pairs = [(decode_kernel(a, n), decode_kernel(b, n)) for n in names]
        print("\n\n".join("\n".join(sass_diff(x, y, args.context)) for x, y in pairs))
        changed = sum([i.word for i in x.instructions] != [i.word for i in y.instructions] for x, y in pairs)
        listed("diff", f"{plural(len(pairs), 'kernel')} compared, {changed} changed")
        return 0

    return run, add


@command("latency-probe", "measure on the GPU the stall floor of producer->consumer pairs (below it results are wrong)")
def _latency_probe():
    def add(p: argparse.ArgumentParser) -> None:
        p.add_argument("--arch", default="sm_90", help="target, e.g. sm_90 (default), sm_100a, sm_103, sm_120")
        p.add_argument("--pairs", help="comma-separated pair names (default: all), e.g. FFMA,DFMA,ISETP->branch")
        p.add_argument(
            "--out",
            help="folder for latency_probe_sm_XX.csv and measured_sm_XX.toml (default: "
            "./latency_probe_sm_XX; REORDER_TABLES=DIR, or a copy in legality/tables/, makes reorder use it)",
        )
        p.add_argument(
            "--build-only",
            action="store_true",
            help="CPU only: compile, locate the chains and write every stall variant, then report",
        )
        p.add_argument("--build-dir", help="where variants are built (default: a temporary folder, or OUT/build)")
        p.add_argument("--from", dest="prebuilt", help="use variants already built into this folder (no nvcc)")
        p.add_argument("--in-process", action="store_true", help="run every pair in this process (no child processes)")
        p.add_argument(
            "--barriers",
            action="store_true",
            help="sweep how soon a memory access may follow BAR.SYNC / BAR.RED and a store precede them "
            "(legality/silicon/barrier_probe.py); with --build-only, list the variants",
        )

    def run(args: argparse.Namespace) -> int:
        from pathlib import Path

        from legality.silicon import latency_probe as lp
        from legality.silicon import probe_chains as pc

        arch, target = _probe_target(args.arch)
        if args.barriers:
            return _barrier_sweep(args, arch, target)
        pairs = pc.selected_pairs(args.pairs)
        names = [p.name for p in pairs]
        if args.build_only:
            folder = Path(args.build_dir or (Path(args.out) / "build" if args.out else pc.scratch_dir()))
            built = pc.build_all(folder, pairs, target)
            for b in built:
                loc = b.located
                if loc.ok:
                    print(
                        f"{b.pair:<16} located  {loc.producer_opcode}->{loc.consumer_opcode} "
                        f"({loc.producer_class}->{loc.consumer_class} {pc.PAIR_BY_NAME[b.pair].kind}), "
                        f"{loc.edges} edges, ptxas stall {sorted(set(loc.ptxas_stalls))}, {len(b.variants)} variants"
                    )
                else:
                    print(f"{b.pair:<16} {loc.reason}")
            print(f"{sum(b.located.ok for b in built)}/{len(built)} pairs located for {target}; variants in {folder}")
            return 0
        lp._cupy()  # no GPU: one line and exit 2, before any compiling
        folder = (
            Path(args.prebuilt)
            if args.prebuilt
            else Path(args.build_dir or (Path(args.out) / "build" if args.out else pc.scratch_dir()))
        )
        if not args.prebuilt:
            pc.build_all(folder, pairs, target)
        out = Path(args.out) if args.out else Path(f"latency_probe_sm_{arch}")  # never the installed package
        if lp.canary_ran(folder, pc.read_manifest(folder).get("canary")) is False:
            print(f"error: {lp.NOT_RUN}", file=sys.stderr)
            return 1
        rows = lp.run_pairs(folder, names, isolate=not args.in_process)
        csv_path, toml_path = out / f"latency_probe_sm_{arch}.csv", out / f"measured_sm_{arch}.toml"
        lp.write_outputs(rows, arch, lp.gpu_name(lp._cupy()), csv_path, toml_path)
        print(lp.table(rows))
        print(f"wrote {csv_path} and {toml_path} (REORDER_TABLES={out} makes reorder use it)")
        unsafe = lp.unsafe_rows(rows)
        for r in unsafe:
            print(
                f"UNSAFE: the verifier accepts {r.pair} at stalls {r.verifier_unsafe}, which gave WRONG results "
                f"on silicon",
                file=sys.stderr,
            )
        return 1 if unsafe else 0

    return run, add


def _write_outcome(args, outcome) -> int:
    from reorder.base.files import write_atomic

    for line in outcome.summary():
        print(line)
    write_atomic(args.output, outcome.data, protect=[args.cubin])
    print(outcome_line(args.output, outcome))
    return 0


@command("stalls", "cut redundant stall counts (StallCut); --skeleton prints a starting config")
def _stalls():
    def add(p: argparse.ArgumentParser) -> None:
        p.add_argument("cubin")
        p.add_argument("-o", "--output")
        p.add_argument("--config", help="sections and hex ranges to process (.text.K c0-d40)")
        p.add_argument("--kernel", type=kernel_name)
        p.add_argument("--skeleton", action="store_true", help="print a config covering every kernel and exit")

    def run(args: argparse.Namespace) -> int:
        from reorder.base.errors import InputError
        from reorder.build.pipeline import cut_stalls
        from reorder.moves.stallconfig import read_config, skeleton

        cubin = read_cubin(args.cubin)
        if args.skeleton:
            print(skeleton(cubin), end="")
            return 0
        if not args.output:
            raise InputError("stalls: -o/--output is required")
        check_output(args.output, [args.cubin])  # refused now, not after the work
        config = read_config(args.config) if args.config else None
        name = args.kernel or (config.kernels()[0] if config and config.kernels() else None)
        code = decode_kernel(cubin, pick_kernel(args, name))
        ranges = config.ranges(code.kernel.name) if config else None
        return _write_outcome(args, cut_stalls(code, ranges))

    return run, add


@command(
    "batch-loads",
    "hoist loads with their address/guard slices and group them (SliceBatch; LoadBatch "
    "fallback), renaming registers and predicates where needed",
)
def _batch_loads():
    def add(p: argparse.ArgumentParser) -> None:
        p.add_argument("cubin", nargs="?")  # may come as --assume-noalias' value (reorder.cli.main)
        p.add_argument("-o", "--output", required=True)
        p.add_argument("--kernel", type=kernel_name)
        p.add_argument(
            "--assume-noalias",
            nargs="?",
            const="all",
            default=None,
            metavar="PARAMS",
            help="assume pointer parameters do not alias (all, or a comma list of indices)",
        )
        p.add_argument(
            "--no-slices",
            action="store_true",
            help="hoist loads alone (LoadBatch), not with their address and guard slices",
        )
        p.add_argument(
            "--extra-registers",
            type=int,
            default=32,
            metavar="N",
            help="how far a slice batch may raise the register count (default 32)",
        )

    def run(args: argparse.Namespace) -> int:
        from reorder.build.pipeline import batch_loads

        check_output(args.output, [args.cubin])  # refused now, not after the work
        code = decode_kernel(read_cubin(args.cubin), pick_kernel(args, args.kernel))
        noalias = _noalias(args.assume_noalias, len(code.kernel.params))
        if noalias:
            which = (
                "all pointer parameters" if isinstance(noalias, bool) else "parameters " + ", ".join(map(str, noalias))
            )
            print(f"ASSUMPTION: {which} do not alias any other buffer")
        return _write_outcome(
            args, batch_loads(code, noalias, slices=not args.no_slices, extra_registers=args.extra_registers)
        )

    return run, add


def _launch_args(p: argparse.ArgumentParser) -> None:
    """Arguments shared by `check` and `time`: the pair, the launch spec, the kernel."""
    p.add_argument("a", metavar="A.cubin", help="reference cubin")
    p.add_argument("b", metavar="B.cubin", help="candidate cubin (may be A itself: an A/A run)")
    p.add_argument(
        "--launch",
        required=True,
        metavar="SPEC.toml",
        help="launch spec (grid, block, parameters): TOML, or the same document as JSON",
    )
    p.add_argument("--kernel", type=kernel_name, help="kernel name (default: the spec's)")


@command("check", "byte-compare B against A on the GPU: exit 0 identical, 1 mismatch, 3 crash/timeout, 4 no GPU")
def _check():
    def add(p: argparse.ArgumentParser) -> None:
        _launch_args(p)
        p.add_argument("--sets", type=int, default=3, help="fresh input sets to compare on (default 3)")
        p.add_argument("--timeout", type=float, default=120.0, help="seconds before the job is killed (default 120)")

    def run(args: argparse.Namespace) -> int:
        from pathlib import Path

        from reorder.base.errors import InputError
        from timing import cli_support as cs
        from timing.evaluate import check_job
        from timing.worker import Job

        if args.sets < 1:
            raise InputError(f"--sets must be at least 1, got {args.sets}")
        timeout = cs.require_positive(args.timeout, "--timeout")
        kernel = pick_kernel(args, args.kernel, "a")
        spec = cs.validated_spec(args.launch, [args.a, args.b], kernel)
        cs.require_gpu()
        job = Job.of(
            check_job, str(Path(args.a).resolve()), str(Path(args.b).resolve()), spec, sets=args.sets, timeout_s=timeout
        )
        return cs.emit(cs.check_outcome(cs.run_one(job)), "check")

    return run, add


@command("time", "time B against A on the GPU (after a byte check): ratio B/A with its 95% CI and a verdict")
def _time():
    def add(p: argparse.ArgumentParser) -> None:
        _launch_args(p)
        p.add_argument("--l2", choices=("warm", "cold"), default="warm", help="L2 state per launch (default warm)")
        p.add_argument(
            "--method",
            choices=("graph", "backtoback"),
            default="graph",
            help="graph: paired CUDA-graph rounds (default); backtoback: the naive way, for comparison",
        )
        p.add_argument(
            "--target-ci",
            type=float,
            default=0.5,
            metavar="PCT",
            help="stop when the CI half-width is below this percentage (default 0.5)",
        )
        p.add_argument(
            "--budget",
            type=float,
            default=10.0,
            metavar="S",
            help="seconds of timing rounds at most (default 10); the job may take 120 s more",
        )

    def run(args: argparse.Namespace) -> int:
        from pathlib import Path

        from timing import cli_support as cs
        from timing.evaluate import check_and_time_job
        from timing.worker import Job

        target = cs.require_positive(args.target_ci, "--target-ci")
        budget = cs.require_positive(args.budget, "--budget")
        kernel = pick_kernel(args, args.kernel, "a")
        spec = cs.validated_spec(args.launch, [args.a, args.b], kernel)
        cs.require_gpu()
        job = Job.of(
            check_and_time_job,
            str(Path(args.a).resolve()),
            str(Path(args.b).resolve()),
            spec,
            l2=args.l2,
            method=args.method,
            target_ci_pct=target,
            budget_s=budget,
            timeout_s=budget + cs.TIME_SETUP_S,
        )
        return cs.emit(cs.time_outcome(cs.run_one(job)), "time")

    return run, add


def _noalias(value: str | None, count: int) -> bool | tuple[int, ...]:
    """--assume-noalias: absent -> False, alone -> True (all), or a comma list of parameter indices."""
    from reorder.base.errors import InputError

    if value is None:
        return False
    if value == "all":
        return True
    try:
        indices = tuple(sorted({int(v) for v in value.split(",")}))
    except ValueError:
        raise InputError(f"--assume-noalias: expected a comma list of parameter indices, got {value!r}") from None
    if not indices or indices[0] < 0 or indices[-1] >= count:
        raise InputError(f"--assume-noalias: parameter indices must be in 0..{count - 1}, got {value!r}")
    return indices


@command("optimize", "search the move space (Optuna), keep the best proven candidate, write a report")
def _optimize():
    def add(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "cubin",
            metavar="INPUT",
            help="a cubin, PTX (nvcc's or Triton's) or CUDA source (.cu); "
            "with PTX at hand the search spans PTX moves, the producer's ptxas and SASS moves",
        )
        p.add_argument(
            "-o",
            "--output",
            required=True,
            metavar="OUT.cubin",
            help="the optimized cubin (never the input); the report goes to OUT.reorder/ beside it",
        )
        p.add_argument(
            "--kernel",
            type=kernel_name,
            help="kernel name, signature or a unique part of one (default: the --launch spec's kernel, "
            "else the cubin's only kernel); with --launch both must name the same kernel",
        )
        p.add_argument(
            "--ptx",
            metavar="FILE",
            help="the PTX a cubin input was compiled from (its kernels' names "
            "as in the cubin): PTX candidates are compiled from it and timed against the cubin",
        )
        p.add_argument(
            "--nvcc-flags",
            default="-O3 -arch=sm_90",
            metavar="FLAGS",
            help="for a .cu input: the flags of `nvcc -ptx` (default: -O3 -arch=sm_90)",
        )
        p.add_argument(
            "--launch",
            action="append",
            metavar="SPEC.toml",
            help="launch spec (TOML); needed on a GPU; names the kernel. Repeat it for every shape the kernel "
            "serves (each batch size): every trial is checked at each and timed at each, and the search minimises "
            "the weighted geometric mean of the per-shape ratios (docs/shapes.md)",
        )
        p.add_argument(
            "--weights",
            metavar="W1,W2,...",
            help="one positive weight per --launch, in their order, for the geometric mean (default: all 1)",
        )
        p.add_argument(
            "--per-shape",
            action="store_true",
            help="with several --launch: where the best binaries of different shapes differ beyond their CIs, "
            "also write one binary per group of shapes and a dispatch manifest (OUT.reorder/dispatch/)",
        )
        p.add_argument(
            "--check-launch",
            action="append",
            default=[],
            metavar="SPEC",
            help="another launch spec of the same kernel the winner must also serve (repeatable; "
            "e.g. each batch size). Every trial is also checked at the largest of them (give one "
            "whose grid fills every SM); the winner is re-checked at all of them",
        )
        p.add_argument(
            "--recheck-sets",
            type=int,
            default=20,
            metavar="N",
            help="fresh input sets per launch in the winner's re-check (default 20)",
        )
        p.add_argument(
            "--budget",
            type=int,
            default=100,
            help="scored trials in the study (default: 100; resumed ones count; a candidate pruned before "
            "scoring, being unbuildable, a duplicate or the original, does not)",
        )
        p.add_argument(
            "--time",
            default="30m",
            help="wall-clock limit of the whole command, e.g. 90s, 10m, 1h (default: 30m): listing, search, the "
            "finalists' timing, the winner's re-check at every launch, pruning, report and write share it "
            "(docs/time_budget.md); the run ends by --time + max(10 s, 5%%) with the best candidate that passed "
            "every check, or a copy of the input and the reason",
        )
        p.add_argument("--jobs", type=int, default=2, help="candidates built in parallel on the CPU")
        p.add_argument("--storage", help="Optuna storage URL (default: SQLite next to the output)")
        p.add_argument("--l2", choices=("warm", "cold"), default="warm")
        p.add_argument(
            "--candidate-budget",
            type=float,
            default=2.0,
            metavar="S",
            help="seconds of paired timing per trial (each finalist gets --final-budget)",
        )
        p.add_argument(
            "--final-budget",
            type=float,
            default=5.0,
            metavar="S",
            help="seconds of paired timing for each of the best 3 binaries, re-scored at the end",
        )
        p.add_argument(
            "--timeline",
            action="store_true",
            help="GPU: probe the original and the winner where they differ; timeline.png in the report",
        )
        p.add_argument(
            "--no-contributions", action="store_true", help="skip re-scoring the winner without each of its moves"
        )
        p.add_argument("--device", choices=("auto", "gpu", "cpu"), default="auto")
        p.add_argument(
            "--unmeasured-arch",
            action="store_true",
            help="without a GPU, write a result for an arch none of whose latency facts was measured on its "
            "silicon (Blackwell before `reorder latency-probe`); the report lists the facts it rests on",
        )
        p.add_argument("--assume-noalias", action="store_true", help="pointer parameters do not alias")
        p.add_argument("--seed", type=int, default=0, help="the search's random seed (worker i adds i)")
        p.add_argument(
            "--workers", type=int, default=1, help="search processes sharing the study (one per GPU on a GPU host)"
        )
        p.add_argument("--search-only", action="store_true", help=argparse.SUPPRESS)
        p.add_argument("--worker-index", type=int, default=0, help=argparse.SUPPRESS)
        p.add_argument("--parent-pid", type=int, default=0, help=argparse.SUPPRESS)

    def run(args: argparse.Namespace) -> int:
        from pathlib import Path

        from reorder.optimize import OptimizeArgs, optimize

        if args.budget < 1 or args.jobs < 1 or args.workers < 1 or args.recheck_sets < 1:
            from reorder.base.errors import InputError

            raise InputError("--budget, --jobs, --workers and --recheck-sets must be at least 1")
        if args.search_only:  # a helper started by another optimize: it must not outlive it
            import os

            from reorder.base.lifetime import watch_parent

            # the pid its starter passed, not getppid(): a starter killed while this helper was
            # still importing has left it reparented, and getppid() would name the new parent
            watch_parent(args.parent_pid or os.getppid())
        launches = [Path(p) for p in args.launch or []]
        args.launch = args.launch[0] if args.launch else None  # the first names the kernel and the report's figures
        weights = _weights(args.weights, args.per_shape, len(launches))
        ptx = _optimize_ptx(args)
        args.kernel = pick_kernel(args, args.kernel)
        optimize(
            OptimizeArgs(
                cubin=Path(args.cubin),
                output=Path(args.output),
                kernel=args.kernel,
                launch=Path(args.launch) if args.launch else None,
                budget=args.budget,
                seconds=seconds(args.time),
                started=args.started,  # set by main: the command line's start, or the call's
                jobs=args.jobs,
                storage=args.storage,
                l2=args.l2,
                device=args.device,
                noalias=args.assume_noalias,
                seed=args.seed,
                candidate_budget_s=args.candidate_budget,
                workers=args.workers,
                search_only=args.search_only,
                worker_index=args.worker_index,
                final_budget_s=args.final_budget,
                timeline=args.timeline,
                contributions=not args.no_contributions,
                check_launches=tuple(Path(c) for c in args.check_launch),
                recheck_sets=args.recheck_sets,
                compiled_from=getattr(args, "compiled_from", {}).get("cubin", ""),
                ptx=ptx,
                unmeasured_arch=args.unmeasured_arch,
                more_launches=tuple(launches[1:]),
                weights=weights,
                per_shape=args.per_shape,
            )
        )
        return 0

    return run, add


def _weights(value: str | None, per_shape: bool, launches: int) -> tuple[float, ...]:
    """--weights as numbers (one per --launch), and --per-shape's need of several shapes."""
    from reorder.base.errors import InputError

    if per_shape and launches < 2:
        raise InputError("--per-shape needs two or more --launch shapes")
    if value is None:
        return ()
    if launches < 2:
        raise InputError("--weights needs two or more --launch shapes (one weight per shape)")
    try:
        weights = tuple(float(w) for w in value.split(","))
    except ValueError:
        raise InputError(f"--weights: expected a comma list of positive numbers, got {value!r}") from None
    if len(weights) != launches or not all(0 < w < float("inf") for w in weights):
        raise InputError(f"--weights {value}: want {launches} positive numbers, one per --launch")
    return weights


def _optimize_ptx(args: argparse.Namespace):
    """The PTX at hand for optimize: --ptx, the PTX input itself, or nvcc's PTX of a .cu input
    (then args.cubin becomes ptxas's cubin of it); None for a plain cubin."""
    from pathlib import Path

    from reorder.base.errors import InputError
    from reorder.ptx.toolchain.compile import compile_ptx
    from reorder.ptx.toolchain.cuda import cuda_ptx

    given = getattr(args, "ptx_inputs", {}).get("cubin")
    if args.cubin.endswith(".cu"):
        if args.ptx:
            raise InputError("--ptx is for a cubin input; a .cu input brings its own PTX")
        ptx = cuda_ptx(Path(args.cubin), args.nvcc_flags)
        made = compile_ptx(ptx)
        assert made is not None  # nvcc -ptx wrote PTX
        print(
            f"reorder: {args.cubin}: nvcc -ptx {args.nvcc_flags} -> {ptx}; {made.recipe.describe()} -> {made.cubin}",
            file=sys.stderr,
        )
        args.compiled_from = {
            "cubin": f"compiled from {args.cubin} by nvcc -ptx {args.nvcc_flags}, then {made.recipe.describe()}"
        }
        args.cubin = str(made.cubin)
        return ptx
    if given and args.ptx:
        raise InputError("--ptx is for a cubin input; the PTX input is the PTX at hand")
    if args.ptx:
        if not Path(args.ptx).is_file():
            raise InputError(f"--ptx {args.ptx}: no such file")
        return Path(args.ptx)
    return Path(given) if given else None


def _probe_target(given: str) -> tuple[int, str]:
    """(arch number, nvcc target) of `--arch` (sm_100a builds for sm_100a; its cubins say sm_100)."""
    from reorder.base.errors import InputError
    from reorder.binary.arches import SUPPORTED_ARCHS, arch_number

    try:
        arch = arch_number(given)
    except ValueError:
        raise InputError(f"--arch {given!r}: expected sm_XX, e.g. sm_90 or sm_100a") from None
    if arch not in SUPPORTED_ARCHS:
        supported = ", ".join(f"sm_{a}" for a in sorted(SUPPORTED_ARCHS))
        raise InputError(f"--arch {given}: reorder does not read sm_{arch} cubins (supported: {supported})")
    name = given.lower()
    return arch, name if name.startswith("sm_") else f"sm_{name}"


def _barrier_sweep(args: argparse.Namespace, arch: int, target: str) -> int:
    """`latency-probe --barriers`: build the barrier variants (and the canary) for `target`; with a
    GPU, byte-check each, print the floor per barrier and side, and write barrier_sweep.csv and
    barriers_sm_XX.toml (the measured distances legality.barriers loads) under --out."""
    import tempfile
    from pathlib import Path

    from legality.silicon import barrier_probe as bp

    with tempfile.TemporaryDirectory() as tmp:
        cubin = bp.probe_cubin(target, Path(args.build_dir or tmp))
        variants = bp.build_variants(cubin)
        if args.build_only:
            for v in variants:
                print(
                    f"{v.kernel:<14} {v.name:<10} {v.barrier:<28} {v.access:<6} "
                    f"{'legal otherwise' if not v.other else 'also breaks: ' + v.other}"
                )
            print(f"{len(variants)} variants for {target} ({cubin.name})")
            return 0
        return _barrier_run(args, arch, cubin, variants, Path(tmp))


def _barrier_run(args: argparse.Namespace, arch: int, cubin, variants, tmp) -> int:
    """The GPU half of `--barriers`: every variant byte-checked at every probe launch."""
    from pathlib import Path

    from legality.silicon import barrier_probe as bp
    from legality.silicon import latency_probe as lp
    from reorder.base.files import write_atomic
    from timing.cli_support import require_gpu
    from timing.worker import WorkerPool

    require_gpu()
    with WorkerPool(devices=[0]) as pool:
        built = []
        for v in variants:
            path = tmp / f"{v.kernel}_{v.name}.cubin"
            path.write_bytes(v.data)
            keys = ("kernel", "side", "cycles", "barrier", "access", "other")
            built.append(({"variant": v.name, **{k: getattr(v, k) for k in keys}}, path))
        rows = bp.run_sweep(cubin, built, pool)
    out = Path(args.out or ".")
    csv_path = write_atomic(out / "barrier_sweep.csv", bp.rows_csv(rows).encode())
    for kernel in bp.KERNELS:
        for side in ("after", "before"):
            print(f"{kernel:<14} {side:<6} floor {bp.floor(rows, kernel, side)}")
    print(f"rows: {csv_path}")
    if not bp.canary_ran(rows):
        print(f"error: {lp.NOT_RUN}", file=sys.stderr)
        return 1
    table = write_atomic(out / f"barriers_sm_{arch}.toml", bp.to_toml(rows, arch, lp.gpu_name(lp._cupy())).encode())
    print(f"wrote {table} (REORDER_TABLES={out} makes reorder use it)")
    return 0


@command("bench", "optimize every kernel of a suite over its parameter grid; CSV, heatmaps, medians")
def _bench():
    def add(p: argparse.ArgumentParser) -> None:
        from reorder.cli.bench import add_arguments

        add_arguments(p)

    def run(args: argparse.Namespace) -> int:
        from reorder.cli.bench import run_args

        return run_args(args)

    return run, add


@command("probe", "sliding clock probe: one variant per instruction position -> timeline CSV with jumps explained")
def _probe():
    def add(p: argparse.ArgumentParser) -> None:
        p.add_argument("cubin")
        p.add_argument(
            "--launch",
            required=True,
            metavar="SPEC.toml",
            help="launch spec (grid and block shape the record addresses)",
        )
        p.add_argument("--kernel", type=kernel_name, help="kernel name (default: the spec's)")
        p.add_argument("--range", metavar="C0-D40", help="hex byte offsets of the instructions to probe after")
        p.add_argument("--build-only", metavar="DIR", help="CPU only: write and check every variant into DIR")
        p.add_argument("-o", "--output", default="timeline.csv", help="timeline CSV (default timeline.csv)")
        p.add_argument("--launches", type=int, default=5, help="launches per variant (default 5)")
        p.add_argument("--no-cost", action="store_true", help="skip timing the probe's own cost")
        p.add_argument(
            "--stamps",
            metavar="OFF,OFF",
            help="region stamps instead of the sliding probe: a global-timer, clock and "
            "global-timer read (with SM id, per warp) after each listed hex offset; -o names the CSV",
        )
        from reorder.cli.hostclock import HOST_CLOCK_HELP

        p.add_argument("--host-clock", action="store_true", help=HOST_CLOCK_HELP)

    def run(args: argparse.Namespace) -> int:
        import tempfile
        from pathlib import Path

        from reorder.base.errors import InputError
        from reorder.probe import run as tp
        from reorder.probe.variants import barrier_neighbours, parse_range, probe_positions
        from timing import cli_support as cs

        if args.launches < 1:
            raise InputError(f"--launches must be at least 1, got {args.launches}")
        spec = cs.validated_spec(args.launch, [args.cubin], pick_kernel(args, args.kernel))
        if args.host_clock and not args.stamps:
            raise InputError("--host-clock puts region stamps on the host clock: give --stamps too")
        if args.stamps:
            return _region_stamps(args, spec)
        code = decode_kernel(read_cubin(args.cubin), spec.name)
        first, last = parse_range(args.range, code) if args.range else (0, None)
        positions = probe_positions(code, first, last)
        if not positions:
            raise InputError(f"{args.cubin}: no instruction to probe in {args.range or 'the kernel'}")
        beside = barrier_neighbours(code, first, last)
        if beside:
            named = ", ".join(f"{code.instructions[k].offset:#06x} {code.instructions[k].opcode}" for k in beside[:4])
            more = f" and {len(beside) - 4} more" if len(beside) > 4 else ""
            print(f"not probed after {len(beside)} instructions beside barriers kept as compiled: {named}{more}")
        if args.build_only:
            built = tp.build_variants(code, positions, tp.layout_of(spec), Path(args.build_only))
            print(built[0][2].occupancy.line())
            print(
                f"{code.kernel.name}: {len(built)} probe variants in {args.build_only} "
                f"(originals bit-identical, verifier: legal)"
            )
            return 0
        cs.require_gpu()
        folder = Path(tempfile.mkdtemp(prefix="reorder-probe-"))
        result = tp.run_probe(args.cubin, spec, folder, first, last, args.launches, time_cost=not args.no_cost)
        from reorder.probe.timeline import write_csv

        write_csv(args.output, result.points, result.found)
        print(result.occupancy)
        for j in result.found:
            source = f", waited for {j.producer_offset:#06x} {j.producer_text}" if j.producer_offset is not None else ""
            print(f"jump +{j.excess:.0f} cycles at {j.offset:#06x} {j.text}{source}")
        for k, reason in result.failed:
            print(f"position {k}: {reason}")
        if result.cost:
            print(f"probe cost: {result.cost}")
        print(f"wrote {args.output}")
        return 1 if result.failed else 0

    return run, add


def _region_stamps(args: argparse.Namespace, spec) -> int:
    """`reorder probe --stamps`: build (and with a GPU, run) the region-stamp variant."""
    import csv
    import io
    from pathlib import Path

    from reorder.base.errors import InputError
    from reorder.base.files import write_atomic
    from reorder.probe import run as tp
    from reorder.probe.variants import build_stamps, check_build, stamp_positions

    try:
        offsets = [int(t, 16) for t in args.stamps.split(",") if t.strip()]
    except ValueError:
        raise InputError(f"--stamps: expected hex offsets like c0,d40, got {args.stamps!r}") from None
    if args.build_only:
        code = decode_kernel(read_cubin(args.cubin), spec.name)
        build = build_stamps(code, stamp_positions(code, offsets), tp.layout_of(spec))
        result = check_build(code, build)
        path = write_atomic(Path(args.build_only) / f"{code.kernel.name}.stamps.cubin", build.data)
        print(
            f"{path}: {len(offsets)} stamps, originals changed: {len(result.changed)}, "
            f"verifier violations: {len(result.violations)}; {build.occupancy.line()}"
        )
        return 0 if not (result.changed or result.violations) else 1
    if args.host_clock:
        from reorder.cli.hostclock import run_host_clock

        return run_host_clock(args, spec, offsets)
    build, rows = tp.run_stamps(args.cubin, spec, offsets, args.launches)
    out = Path(args.output if args.output != "timeline.csv" else "stamps.csv")
    handle = io.StringIO(newline="")
    writer = csv.DictWriter(handle, fieldnames=tp.STAMP_FIELDS)
    writer.writeheader()
    writer.writerows(rows)
    write_atomic(out, handle.getvalue().encode())  # whole or absent, on a full disk too
    print(f"{out}: {len(rows)} records ({len(offsets)} stamps); {build.occupancy.line()}")
    return 0


@command("timeline", "plot one or two timeline CSVs (original, optimized) as a PNG with jumps annotated")
def _timeline():
    def add(p: argparse.ArgumentParser) -> None:
        p.add_argument("csv", nargs="+", help="one or two timeline CSVs from `reorder probe`")
        p.add_argument("-o", "--output", default="timeline.png")

    def run(args: argparse.Namespace) -> int:
        from pathlib import Path

        from reorder.base.errors import InputError
        from reorder.probe.timeline import plot, read_csv

        if len(args.csv) > 2:
            raise InputError("timeline: give one or two CSVs (original, optimized)")
        tables = [(Path(c).stem, read_csv(c)) for c in args.csv]
        print(f"wrote {plot(tables, args.output, protect=args.csv)}")
        return 0

    return run, add


@command("host-timeline", "draw probe --host-clock events CSVs (one per GPU) on one host axis; count proven orders")
def _host_timeline():
    from reorder.cli import hostclock

    return hostclock.run_timeline, hostclock.add_timeline_arguments


@command(
    "ptx-hoist",
    "PTX GlobalHoist: list loads' legal destinations, or move loads up (above barriers, "
    "stores, out of ifs and loops) and write the PTX and its verified cubin",
)
def _ptx_hoist():
    from reorder.cli import ptxhoist as ptx_command

    def run(args: argparse.Namespace) -> int:
        return ptx_command.run(args, _noalias)

    return run, ptx_command.add_arguments


@command(
    "ptx-loops",
    "PTX loop moves: list loops, or Prefetch a loop's loads D iterations ahead / "
    "UnrollBatch it K times, and write the PTX and its verified cubin",
)
def _ptx_loops():
    from reorder.cli import ptxloops as loopcommand

    def run(args: argparse.Namespace) -> int:
        return loopcommand.run(args, _noalias)

    return run, loopcommand.add_arguments
