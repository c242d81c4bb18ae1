"""A study's storage that the system will not let it write, as one line naming the database.

`optimize -o` onto a full file system gave two tracebacks ending in sqlite's "database or disk
is full" (raised through SQLAlchemy from inside Optuna, while it made its tables) and left an
8 KiB study.db behind. The storage's errors are told apart here: the system refusing the
write (full, read-only, quota, cannot create the file) is an OutputError naming the file;
anything else (two workers racing to make the schema) is left to its caller.
"""

from __future__ import annotations

import contextlib
import errno
from collections.abc import Iterator

from reorder.base.errors import OutputError
from reorder.base.files import write_failure

# What sqlite says when the system refuses (sqlite3.OperationalError text, through SQLAlchemy).
_REFUSALS = {
    "database or disk is full": "No space left on device (database or disk is full)",
    "attempt to write a readonly database": "a read-only database or folder",
    "unable to open database file": "cannot create or open it there (a read-only or missing folder?)",
    "disk i/o error": "disk I/O error (a full disk or quota?)",
}
_WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EFBIG, errno.EPERM})


def database_of(url: str) -> str:
    """The file (or, for a server, the URL without its password) a storage URL names."""
    if url.startswith("sqlite:///"):
        return url[len("sqlite:///") :]
    if url.startswith("journal:"):
        return url[len("journal:") :]
    head, at, host = url.rpartition("@")
    return f"{head.split(':', 2)[0]}:...@{host}" if at else url


def storage_failure(exc: BaseException, url: str) -> OutputError | None:
    """The OutputError for a storage write the system refused, or None for other errors."""
    if isinstance(exc, OutputError):
        return exc
    if isinstance(exc, OSError):  # the journal storage writes with os.write: no file named
        named = exc.filename or (database_of(url) if url.startswith("journal:") else None)
        return write_failure(named, exc) if exc.errno in _WRITE_ERRNOS and named else None
    text = str(getattr(exc, "orig", None) or exc).lower()
    reason = next((said for key, said in _REFUSALS.items() if key in text), None)
    if reason is None:
        return None
    return OutputError(database_of(url), f"{reason}; the study could not be written")


@contextlib.contextmanager
def storage_failures(url: str) -> Iterator[None]:
    """Run the block; a storage write the system refused comes out as one OutputError."""
    from sqlalchemy.exc import SQLAlchemyError

    try:
        yield
    except (SQLAlchemyError, OSError) as exc:
        failed = storage_failure(exc, url)
        if failed is None:
            raise
        raise failed from None
