"""The file system boundary: what reorder reads is a bounded regular file, what it writes
replaces only a regular file.

A device node, a FIFO or `/dev/zero` named as an input blocks forever or reads without end
(a MemoryError traceback under a memory limit); named as an output, the atomic write (a temp
file renamed over the target) would replace `/dev/null` itself with a regular file. So every
input a command reads comes through `read_input` (a regular file, at most MAX_INPUT_BYTES)
and every output is checked by `check_output` (absent, or a regular file that is not an input)
before anything is written. A replaced file keeps its mode; a new one gets the user's umask.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from reorder.base.errors import InputError, OutputError, ReorderError

# The largest input reorder reads. Real cubins are kilobytes to a few megabytes (the largest of
# the corpus and suite is 135 KB); launch specs, configs and CSVs are smaller still.
MAX_INPUT_BYTES = 256 * 2**20

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
)


def kind_of(mode: int) -> str:
    """'a folder', 'a FIFO', ... for a non-regular file's st_mode."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def read_input(path: str | Path, error: type[ReorderError] = InputError, limit: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of a regular file of at most `limit` bytes; anything else is one `error` line.

    Opened non-blocking, so a FIFO is refused instead of waiting for a writer; read with a
    bound, so a file that grows (or lies about its size, as /proc files do) cannot exhaust memory.
    """
    p = Path(path)
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise error(f"{p}: cannot read: {exc.strerror or exc}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):  # before fdopen, which refuses a folder naming only its descriptor ("4: ...")
        os.close(fd)
        raise error(f"{p}: {kind_of(mode)}, not a regular file; reorder reads only files")
    with os.fdopen(fd, "rb") as handle:
        try:
            data = handle.read(limit + 1)
        except OSError as exc:
            raise error(f"{p}: cannot read: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise error(f"{p}: larger than {limit // 2**20} MiB, the most reorder reads")
    return data


def read_text_input(path: str | Path, error: type[ReorderError] = InputError, what: str = "text") -> str:
    """A bounded regular file decoded as UTF-8 (a binary file is refused in one line)."""
    try:
        return read_input(path, error).decode("utf-8")
    except UnicodeDecodeError:
        raise error(f"{path}: not a {what} file (not UTF-8 text)") from None


def check_output(path: str | Path, protect: Sequence[str | Path] = ()) -> Path:
    """The output path, refused in one line when writing it would harm something: a folder,
    a device, a FIFO or a socket (a rename would replace the node itself), or one of the
    inputs (`protect`, hard links included). Cheap: call it before the work, not only after."""
    target = Path(path)
    try:
        st = target.stat()
    except FileNotFoundError:
        return target
    except OSError as exc:
        raise InputError(f"{target}: cannot write there: {exc.strerror or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError(f"{target}: is a folder; -o needs a file name")
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{target}: {kind_of(st.st_mode)}; refusing to replace it with a file (choose another -o)")
    for p in protect:
        try:
            same = os.path.samefile(p, target)
        except OSError:
            continue
        if same:
            raise InputError(f"{target}: refusing to overwrite the input file; choose another -o")
    return target


def output_mode(target: Path) -> int:
    """The mode an output gets: the replaced file's own, else what the umask allows of 0666."""
    try:
        return stat.S_IMODE(target.stat().st_mode)
    except OSError:
        return 0o666 & ~umask()


def umask() -> int:
    """The process umask, read without changing it where /proc says it (Linux 4.7+)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    current = os.umask(0o022)
    os.umask(current)
    return current


def write_failure(path: str | Path, exc: OSError) -> OutputError:
    """The one line for a write the system refused, naming the file (the OSError of a write()
    names none: "No space left on device" and "File too large" came without a file)."""
    reason = exc.strerror or str(exc)
    hint = _WRITE_HINTS.get(exc.errno or 0, "")
    return OutputError(path, f"{reason}{hint}")


_WRITE_HINTS = {
    errno.ENOSPC: " (free space there, or choose another -o)",
    errno.EDQUOT: " (free space under the quota, or choose another -o)",
    errno.EROFS: " (choose another -o)",
    errno.EACCES: " (choose another -o)",
    errno.EFBIG: " (over the file-size limit: ulimit -f)",
}


def write_atomic(path: str | Path, data: bytes, protect: Sequence[str | Path] = ()) -> Path:
    """Write `data` to `path` via a temporary file and rename: the target is the old file or
    the new one, never part of either. Refused in one line: an input (`protect`), a folder, a
    device or FIFO (check_output); a full disk, a read-only folder or a quota (OutputError,
    the temporary file removed). A replaced file keeps its mode, a new one gets the umask's
    (not mkstemp's 0600)."""
    target = check_output(path, protect)
    mode = output_mode(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as exc:
        raise write_failure(target, exc) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), mode)
            handle.write(data)
        os.replace(tmp, target)
    except OSError as exc:
        _remove(tmp)
        raise write_failure(target, exc) from None
    except BaseException:
        _remove(tmp)
        raise
    return target


def _remove(path: str | Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


@contextlib.contextmanager
def undone_on_failure(
    folder: Path, failures: tuple[type[BaseException], ...] = (OutputError,), outputs: Sequence[Path] = ()
) -> Iterator[None]:
    """Run the block; if it fails to write (one of `failures`), remove what it added: the
    entries of `folder` that were not there before (the folder itself if it was new), and each
    of `outputs` and its sidecars (`out.cubin.provenance.json`) that were not there before. What
    was there before stays (a resumed study's database: sqlite kept it whole). A signal or an
    interrupt undoes nothing: a killed search resumes from what it wrote."""
    existed = folder.is_dir()
    before = {p.name for p in folder.iterdir()} if existed else set()
    beside = {o: set(_named_from(o)) for o in outputs}
    try:
        yield
    except failures:
        if folder.is_dir():
            for entry in folder.iterdir():
                if entry.name not in before:
                    _remove_entry(entry)
            if not existed:
                shutil.rmtree(folder, ignore_errors=True)
        for output, were in beside.items():
            for entry in set(_named_from(output)) - were:
                _remove_entry(entry)
        raise


def _named_from(output: Path) -> list[Path]:
    """`output` and the files beside it whose names extend its own."""
    try:
        return [p for p in output.parent.iterdir() if p.name.startswith(output.name) and p != output.parent]
    except OSError:
        return []


def _remove_entry(entry: Path) -> None:
    if entry.is_dir():
        shutil.rmtree(entry, ignore_errors=True)
    else:
        _remove(entry)
