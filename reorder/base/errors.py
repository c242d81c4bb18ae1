"""One error root for everything reorder refuses, so the CLI can print one line and exit.

Each subclass carries the structured facts a bug report needs (offset, opcode, the
external command and its stderr) instead of burying them in a message string.
"""

from __future__ import annotations

from reorder.base import exitcodes


class ReorderError(Exception):
    """Root of every error reorder raises on purpose. `exit_code` is what the CLI returns
    (reorder.base.exitcodes: the one table)."""

    exit_code = exitcodes.INPUT


class InputError(ReorderError):
    """The input file cannot be used: empty, corrupt, foreign, or of an unsupported arch."""


class OutputError(ReorderError):
    """An output cannot be written: a full disk, a read-only folder, a quota, a file-size limit.
    Carries the file and the system's reason; what the failed write had started is removed."""

    def __init__(self, path: object, reason: str) -> None:
        super().__init__(f"{path}: cannot write: {reason}")
        self.path = str(path)
        self.reason = reason

    def __reduce__(self):  # raised in a build worker, it crosses a process boundary
        return (type(self), (self.path, self.reason))


class ToolError(ReorderError):
    """An external tool (nvdisasm, cuobjdump, nvcc, ptxas) is missing or failed."""

    def __init__(self, message: str, command: tuple[str, ...] = (), stderr: str = "") -> None:
        super().__init__(message)
        self.command = command
        self.stderr = stderr


class ToolTimeout(ToolError):
    """An external tool did not finish within its bound (nvdisasm spins on some corrupt cubins)."""


class EncodingError(ReorderError):
    """An instruction could not be encoded or decoded (a field out of range, an unknown layout)."""

    def __init__(self, message: str, offset: int | None = None, opcode: str = "") -> None:
        super().__init__(message)
        self.offset = offset
        self.opcode = opcode


class LegalityError(ReorderError):
    """A schedule breaks a dependency; carries the violations found."""

    exit_code = exitcodes.VERDICT

    def __init__(self, message: str, violations: tuple = ()) -> None:
        super().__init__(message)
        self.violations = violations


class NotApplicable(LegalityError):
    """A move has nothing to do on this kernel (e.g. an earlier move already changed its block)."""


class SpecError(ReorderError):
    """A launch spec is malformed or does not match the kernel's parameters."""


class GpuError(ReorderError):
    """A CUDA failure: a cubin the driver refused, a kernel that faulted or hung, timing that
    could not complete."""

    exit_code = exitcodes.CRASH


class NoGpuError(GpuError):
    """No usable CUDA GPU where the command needs one (its own exit code: a script on a CPU
    machine must tell this from bad input)."""

    exit_code = exitcodes.NO_GPU


def one_line(text: str) -> str:
    """`text` with its control characters escaped (a newline as \\n), so that a message naming
    a path with a newline in it stays the one line a user and a script read."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
