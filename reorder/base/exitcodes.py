"""The exit codes of every reorder command: one table, read by the errors (their `exit_code`),
the CLI's --help epilog and docs/cli.md, so a script can tell a verdict from bad input from
a machine without a GPU."""

from __future__ import annotations

OK = 0  # done: the result is written or printed (verify: legal; check: identical)
VERDICT = 1  # the command ran and its answer is no: violations, different bytes, a move not legal
INPUT = 2  # bad input: a file, option or spec that cannot be used, or a tool it needs is missing
CRASH = 3  # the GPU run failed: a kernel faulted or hung, a worker died, the driver refused a cubin
NO_GPU = 4  # no usable CUDA GPU where the command needs one
INTERRUPTED = 130  # Ctrl-C
TERMINATED = 143  # SIGTERM

TABLE: tuple[tuple[int, str], ...] = (
    (OK, "done: the result is written or printed (verify: legal; check: identical)"),
    (VERDICT, "a verdict against it: verify found violations or cannot judge, check/time found different bytes"),
    (INPUT, "bad input: a file, option or spec that cannot be used (one line names it), or a missing tool"),
    (CRASH, "the GPU run failed: a kernel faulted or hung, a worker died, the driver refused a cubin"),
    (NO_GPU, "no usable CUDA GPU where one is needed (check, time, probe, optimize --device gpu, ...)"),
    (INTERRUPTED, "interrupted (Ctrl-C)"),
    (TERMINATED, "terminated (SIGTERM)"),
)


def table_text(indent: str = "  ") -> str:
    """The table as --help prints it."""
    return "exit codes (the same for every command):\n" + "\n".join(
        f"{indent}{code:<4} {meaning}" for code, meaning in TABLE
    )


def table_markdown() -> str:
    """The table as docs/cli.md shows it."""
    return "| exit | meaning |\n|---|---|\n" + "\n".join(f"| {code} | {meaning} |" for code, meaning in TABLE)
