"""`reorder optimize`: search the move space, keep the best proven candidate, write a report."""

from __future__ import annotations

import argparse
import sys

from reorder.cli.kernelpick import pick_kernel
from reorder.cli.options import kernel_name
from reorder.cli.registry import command, seconds


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
