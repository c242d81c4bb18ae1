"""`reorder check`: byte-compare a candidate against its original on the GPU."""

from __future__ import annotations

import argparse

from reorder.cli.kernelpick import pick_kernel
from reorder.cli.options import launch_args
from reorder.cli.registry import command


@command("check", "byte-compare B against A on the GPU: exit 0 identical, 1 mismatch, 3 crash/timeout, 4 no GPU")
def _check():
    def add(p: argparse.ArgumentParser) -> None:
        launch_args(p)
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
