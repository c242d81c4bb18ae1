"""The provenance record of an optimize output: how the cubin was made, so that
`reorder verify OUT --against IN` can judge it by the route that made it.

A SASS-route output is a reordering of its input: the verifier judges it against the input's
instructions. A PTX-route output is not: it is another ptxas build (of the input's PTX with
PTX moves made), then SASS moves on that build. Judged as a reordering of the input it shows
violations that are only the two builds' differences. What judging it by its route needs is
written beside it, as `OUT.provenance.json` (a file beside the cubin rather than an ELF
section inside it: the cubin stays exactly the bytes that were checked and timed):

- which kernel, the output's SHA-256 (a record beside another file is stale, not trusted);
- the cubin the search started from (for a PTX input: ptxas's build of it) and its SHA-256;
- for the PTX route: the PTX the moves were made on (path and SHA-256), the no-alias
  assumption, the picks (each a kind, a key and a choice, as the search made them), the
  moves they made, the moved PTX's SHA-256, the recipe and SHA-256 of ptxas's build, and the
  SASS families applied on it.

The record is evidence for a check, not the check: `verify` remakes every step from the input
(reorder.build.judge) and compares the bytes against the digests here.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path

from reorder.base.errors import InputError
from reorder.base.files import read_text_input, write_atomic

FORMAT = "reorder-provenance/1"
SUFFIX = ".provenance.json"
ROUTES = ("copy", "sass", "ptx")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def record_path(output: str | Path) -> Path:
    """Where the record of `output` lives: beside it, its name plus SUFFIX."""
    out = Path(output)
    return out.with_name(out.name + SUFFIX)


@dataclass(frozen=True)
class PtxRoute:
    """What a PTX-route output was made of (module docstring)."""

    ptx: str
    ptx_sha256: str
    noalias: bool
    picks: tuple[tuple[str, str, str], ...]
    applied: tuple[str, ...]
    moved_sha256: str
    recipe: str
    build_sha256: str
    sass: str


@dataclass(frozen=True)
class Record:
    """An output's provenance (module docstring). `route`: 'copy' (the input's own bytes),
    'sass' (SASS moves on the input) or 'ptx'."""

    kernel: str
    route: str
    output_sha256: str
    original: str
    original_sha256: str
    made_from: str  # the input as the user gave it, in words (a PTX or .cu input says how it was compiled)
    ptx: PtxRoute | None = None

    def to_json(self) -> str:
        return json.dumps({"format": FORMAT, **asdict(self)}, indent=1) + "\n"

    def describes(self, data: bytes) -> bool:
        """Whether this record was written for these output bytes."""
        return sha256(data) == self.output_sha256


def write_record(output: Path, record: Record, protect: tuple[Path, ...] = ()) -> Path:
    """Write `output`'s record beside it (atomically, never over an input)."""
    return write_atomic(record_path(output), record.to_json().encode(), protect=list(protect))


def read_record(output: str | Path) -> Record | None:
    """The record beside `output`, None when there is none; a record that does not read as
    one is one InputError naming it."""
    path = record_path(output)
    if not path.is_file():
        return None
    try:
        raw = json.loads(read_text_input(path, what="provenance record"))
        if raw.pop("format") != FORMAT or raw["route"] not in ROUTES:
            raise ValueError(f"not a {FORMAT} record")
        ptx = raw.pop("ptx")
        if ptx is not None:
            ptx = PtxRoute(**{**ptx, "picks": tuple(tuple(p) for p in ptx["picks"]), "applied": tuple(ptx["applied"])})
        return Record(**raw, ptx=ptx)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InputError(f"{path}: not a provenance record reorder wrote ({type(exc).__name__}: {exc})") from None


def ptx_route(level, picks: tuple, sass: str) -> PtxRoute:
    """The PTX route of a winner with PTX picks: the moves remade on the level's PTX and
    ptxas's build of them (content-cached, so the same bytes the search built)."""
    from reorder.build.ptxbuild import ptx_build
    from reorder.build.ptxlevel import moved_ptx

    module, applied = moved_ptx(level, picks)
    build = ptx_build(level, module)
    given = Path(level.given or level.path)
    return PtxRoute(
        str(given),
        sha256(given.read_bytes()),
        bool(level.noalias),
        tuple((p.kind, p.key, p.choice) for p in picks),
        tuple(applied),
        sha256(module.text.encode()),
        build.recipe,
        sha256(build.data),
        sass,
    )


def output_record(data: bytes, kernel: str, original: Path, made_from: str, level=None, choice=None) -> Record:
    """The record of the bytes optimize writes as its output: the input's copy, SASS moves on
    it, or the PTX route of `choice`."""
    base = original.read_bytes()
    picks = tuple(choice.ptx) if choice is not None else ()
    if data == base:
        route, ptx = "copy", None
    elif picks and level is not None:
        route, ptx = "ptx", ptx_route(level, picks, choice.sass)
    else:
        route, ptx = "sass", None
    return Record(kernel, route, sha256(data), str(original.resolve()), sha256(base), made_from, ptx)


def write_with_record(output: Path, data: bytes, record: Record, protect: tuple[Path, ...] = ()) -> Path:
    """Write the record, then the output; an output that cannot be written takes its new
    record with it (a record never describes bytes that are not there)."""
    written = write_record(output, record, protect)
    try:
        return write_atomic(output, data, protect=list(protect))
    except BaseException:
        written.unlink(missing_ok=True)
        raise
