"""Subcommand handlers of the `reorder` CLI (argument wiring only; the work lives elsewhere)."""

from __future__ import annotations

import argparse

from reorder.cli import command
from reorder.cubin import read_cubin
from reorder.listing import render_json, render_text
from reorder.sass import decode_kernel


@command("disasm", "annotated SASS: control codes, read/write sets")
def _disasm():
    def add(p: argparse.ArgumentParser) -> None:
        p.add_argument("cubin")
        p.add_argument("--kernel", help="kernel name (default: every kernel)")
        p.add_argument("--json", action="store_true", help="records with offset, opcode, text and control fields")

    def run(args: argparse.Namespace) -> int:
        cubin = read_cubin(args.cubin)
        names = [args.kernel] if args.kernel else [k.name for k in cubin.kernels]
        codes = [decode_kernel(cubin, n) for n in names]
        print(render_json(codes) if args.json else "\n\n".join(render_text(c) for c in codes))
        return 0

    return run, add


@command("verify", "prove or reject a schedule: exit 0 legal, 1 with a report of violations, 2 bad input")
def _verify():
    def add(p: argparse.ArgumentParser) -> None:
        p.add_argument("cubin")
        p.add_argument("--kernel", help="kernel name (default: every kernel)")

    def run(args: argparse.Namespace) -> int:
        from legality.verify import verify_kernel

        cubin = read_cubin(args.cubin)
        names = [args.kernel] if args.kernel else [k.name for k in cubin.kernels]
        bad = 0
        for name in names:
            report = verify_kernel(decode_kernel(cubin, name))
            unknown = f", {len(report.unknown)} unknown opcodes kept as barriers" if report.unknown else ""
            status = "legal" if report.ok else f"{len(report.violations)} violations"
            print(f"{name}: sm_{report.arch}: {status}{unknown}")
            for v in report.violations:
                print("  " + v.line())
            for off, opcode in report.unknown:
                print(f"  unknown  {off:#06x} {opcode} (not verified through; never moved)")
            bad += not report.ok
        return 1 if bad else 0

    return run, add
