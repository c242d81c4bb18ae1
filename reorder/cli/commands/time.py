"""`reorder time`: time a candidate against its original on the GPU, after a byte check."""

from __future__ import annotations

import argparse

from reorder.cli.kernelpick import pick_kernel
from reorder.cli.options import launch_args
from reorder.cli.registry import command


@command("time", "time B against A on the GPU (after a byte check): ratio B/A with its 95% CI and a verdict")
def _time():
    def add(p: argparse.ArgumentParser) -> None:
        launch_args(p)
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
