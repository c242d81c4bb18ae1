"""The stages inspection hook (reorder.triton.hook) and the marker it reads (reorder.triton.request):
first with a fake backend and fake compile stages (no Triton needed), then through Triton's
own compile for sm_90 without a GPU."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from types import SimpleNamespace

import pytest

from reorder.base.errors import InputError
from reorder.triton import hook as hook_module
from reorder.triton.request import Request, parse_token, split_options, with_marker
from reorder.triton.rewrite import Rewritten, rewrite_or_keep

HAVE_TRITON = importlib.util.find_spec("triton") is not None
needs_triton = pytest.mark.skipif(not HAVE_TRITON, reason="triton is not installed")


# ---------------------------------------------------------------- the marker


@pytest.mark.parametrize(
    "request_",
    [
        Request(),
        Request(noalias=True),
        Request("search", budget=8),
        Request("tuned", key="0123abcd4567ef89", noalias=True),
        Request(noalias=True, rev="0123456789ab"),
    ],
)
def test_a_request_reads_back_from_its_token(request_):
    assert parse_token(request_.token()) == request_


def test_a_stamped_marker_changes_with_reorders_sources_but_not_what_is_built(monkeypatch):
    from reorder.triton import digest, rewrite

    monkeypatch.setattr(digest, "code_digest", lambda: "aaaaaaaaaaaaaaaa")
    old = Request(noalias=True).stamped()
    monkeypatch.setattr(digest, "code_digest", lambda: "bbbbbbbbbbbbbbbb")
    new = Request(noalias=True).stamped()
    assert old.token() == "--reorder=moves,noalias,rev:aaaaaaaaaaaa" and new.token() != old.token()  # a new cache key
    assert rewrite.static_path(b"cubin", new) == rewrite.static_path(b"cubin", Request(noalias=True))
    assert Request("tuned", key="0123abcd").stamped() == Request("tuned", key="0123abcd")  # named by content


def test_the_marker_is_split_from_ptxas_options_and_replaced_not_doubled():
    assert split_options("--reorder=search:4 -O3") == (Request("search", budget=4), "-O3")
    assert split_options("--reorder") == (Request(), None)
    assert split_options(None) == (None, None) and split_options("-O3") == (None, "-O3")
    assert with_marker("-O3 --reorder", Request("search", budget=2)) == "-O3 --reorder=search:2"


@pytest.mark.parametrize(
    "token",
    ["--reorder=search:0", "--reorder=search:x", "--reorder=tuned:XYZ", "--reorder=fast", "--reorder=noalias:1"],
)
def test_a_malformed_marker_is_one_line(token):
    with pytest.raises(InputError, match="reorder marker"):
        parse_token(token)
    with pytest.raises(InputError, match="more than one reorder marker"):
        split_options("--reorder --reorder=moves")


# ---------------------------------------------------------------- the hook, faked


@dataclass(frozen=True)
class Options:
    num_warps: int = 4
    ptx_options: str | None = None


class Backend:
    """The part of Triton's CUDA backend the hook uses: make_cubin and target.arch."""

    def __init__(self):
        self.target = SimpleNamespace(arch=90)
        self.seen: list[Options] = []

    def make_cubin(self, src, metadata, options, arch):
        self.seen.append(options)
        return b"CUBIN:" + src.encode()

    def add_stages(self, knobs, options):
        """What Triton's add_stages does: build the stages, then call the hook."""
        stages = {"ptx": lambda src, md: src, "cubin": lambda src, md: self.make_cubin(src, md, options, 90)}
        if knobs.runtime.add_stages_inspection_hook is not None:
            knobs.runtime.add_stages_inspection_hook(self, stages, options, "triton", 90)
        return stages


def _knobs(previous=None):
    return SimpleNamespace(runtime=SimpleNamespace(add_stages_inspection_hook=previous))


@pytest.fixture
def fake_rewrite(monkeypatch):
    calls = []

    def rewrite(cubin, request, say=None, **ptx_step):
        calls.append(request)
        return Rewritten(cubin + b"+reorder", True, f"rewritten for {request.token()}")

    monkeypatch.setattr(hook_module, "rewrite_or_keep", rewrite)
    return calls


def test_install_chains_the_previous_hook_is_idempotent_and_uninstall_restores_it(fake_rewrite):
    seen = []
    knobs = _knobs(lambda *args: seen.append(args))
    installed = hook_module.install(knobs, say=None)
    assert hook_module.install(knobs, say=None) is installed and installed.previous is not None
    Backend().add_stages(knobs, Options())
    assert len(seen) == 1  # the unmarked config went to the previous hook, unchanged
    hook_module.uninstall(knobs)
    assert knobs.runtime.add_stages_inspection_hook is installed.previous


def test_an_unmarked_config_compiles_as_before(fake_rewrite):
    knobs = _knobs()
    hook_module.install(knobs, say=None)
    backend = Backend()
    stages = backend.add_stages(knobs, Options(ptx_options="-O3"))
    assert stages["cubin"]("k", {}) == b"CUBIN:k" and backend.seen == [Options(ptx_options="-O3")]
    assert fake_rewrite == []


def test_a_marked_config_gets_reorders_binary_and_ptxas_never_sees_the_marker(fake_rewrite):
    order = []

    def previous(backend, stages, options, language, capability):
        order.append(options.ptx_options)  # the previous hook sees the pipeline without the marker
        inner = stages["cubin"]
        stages["cubin"] = lambda src, md: inner(src, md) + b"+previous"

    knobs = _knobs(previous)
    hook_module.install(knobs, say=None)
    backend = Backend()
    stages = backend.add_stages(knobs, Options(ptx_options="-O3 --reorder=search:3"))
    metadata = {"name": "k"}
    assert stages["cubin"]("k", metadata) == b"CUBIN:k+previous+reorder"
    assert backend.seen == [Options(ptx_options="-O3")] and order == ["-O3"]
    assert fake_rewrite == [Request("search", budget=3)] and metadata["reorder"] == "rewritten for --reorder=search:3"
    stages = backend.add_stages(knobs, Options(ptx_options="--reorder"))
    stages["cubin"]("k", {})
    assert backend.seen[-1] == Options(ptx_options=None)  # nothing left: Triton's own default


def test_the_cache_key_call_names_reorder_and_joins_the_previous_hooks_key():
    def previous(*args):
        return ("-theirs", "abc") if not args else None

    knobs = _knobs(previous)
    hook = hook_module.install(knobs, say=None)
    key, digest = hook()
    assert key.startswith("-theirs-reorder-") and isinstance(digest, str) and len(digest) == 32
    assert hook_module.make_hook(None)()[0].startswith("-reorder-")


def test_a_rewrite_that_fails_keeps_the_compilers_cubin(monkeypatch):
    def broken(cubin, request):
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr("reorder.triton.rewrite.rewrite", broken)
    lines = []
    result = rewrite_or_keep(b"cubin", Request(), say=lines.append)
    assert result == Rewritten(b"cubin", False, "reorder failed (RuntimeError: boom): the compiler's cubin is kept")
    assert lines == [f"reorder: {result.note}"]


def test_a_tuned_marker_names_a_stored_binary_or_keeps_the_original():
    from reorder.triton.rewrite import rewrite, store_tuned

    key = store_tuned(b"original", b"winner", {"score": "0.9"})
    assert rewrite(b"original", Request("tuned", key=key)).data == b"winner"
    missing = rewrite(b"other", Request("tuned", key=key))
    assert missing.data == b"other" and not missing.changed and "no tuned binary" in missing.note


# ---------------------------------------------------------------- through Triton


@pytest.fixture
def triton_env(tmp_path, monkeypatch):
    """A private Triton cache (3.6 does not key the hook: an old result must not be served)."""
    pytest.importorskip("triton")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))
    import triton

    previous = triton.knobs.runtime.add_stages_inspection_hook
    yield triton
    triton.knobs.runtime.add_stages_inspection_hook = previous


def _rmsnorm_call(**options):
    from reorder.suite.triton_kernels import family, stand_in_args
    from reorder.triton.compile import compile_call

    case = family("rmsnorm_looped_fp16").case((16, 16384))
    return compile_call(
        case.kernel, *stand_in_args(case), arch=90, **case.constexprs, num_warps=4, LOOP_STAGES=2, **options
    )


@needs_triton
def test_triton_compiles_a_marked_config_into_a_legal_reorder_binary(triton_env):
    from legality.verify import verify_kernel
    from reorder.binary.cubin import parse_cubin
    from reorder.sass.model import decode_kernel

    plain = _rmsnorm_call()
    hook_module.install(say=None)
    marked = _rmsnorm_call(ptx_options="--reorder")
    again = _rmsnorm_call()  # unmarked configs are untouched with the hook installed
    assert again.cubin == plain.cubin and marked.cubin != plain.cubin
    assert "static moves" in marked.kernel.metadata.reorder
    before = decode_kernel(parse_cubin(plain.cubin))
    after = decode_kernel(parse_cubin(marked.cubin))
    assert verify_kernel(after, original=before.instructions).ok
    assert len(after.instructions) == len(before.instructions) and after.kernel.name == before.kernel.name


@needs_triton
def test_without_the_hook_a_marked_config_fails_loudly_in_ptxas(triton_env):
    from triton.runtime.errors import PTXASError

    hook_module.uninstall()
    with pytest.raises(PTXASError):
        _rmsnorm_call(ptx_options="--reorder=search:1")


@needs_triton
def test_a_marked_feed_forward_gets_the_wgmma_step_then_the_sass_moves(triton_env, monkeypatch, tmp_path):
    """The hook's `moves` path on the kernel ptxas serializes (eight HGMMAs, each followed by
    a wait of 0): the PTX step leaves one wait of 0, on the loop's way out; the note says so;
    rt.verify's static judgment (against that step's own compile) calls it legal."""
    from reorder.binary.cubin import parse_cubin
    from reorder.sass.model import decode_kernel
    from reorder.suite.triton_kernels import family, stand_in_args
    from reorder.triton.compile import compile_call
    from reorder.triton.prove import static_verdict

    monkeypatch.setenv("REORDER_CACHE", str(tmp_path / "reorder-cache"))
    case = family("ffn_swiglu_fp16").case((512, 512, 512))

    def call(**options):
        args = stand_in_args(case)
        return compile_call(case.kernel, *args, arch=90, **case.constexprs, num_warps=4, num_stages=3, **options)

    def zero_waits(cubin: bytes) -> int:
        code = decode_kernel(parse_cubin(cubin))
        return sum("WARPGROUP.DEPBAR.LE gsb0, 0x0" in i.text for i in code.instructions)

    plain = call()
    hook_module.install(say=None)
    marked = call(ptx_options="--reorder=moves,noalias")
    assert zero_waits(plain.cubin) == 8 and zero_waits(marked.cubin) == 1
    assert marked.kernel.metadata.reorder.startswith("wgmma waits made exact in 1 loop(s)")
    legal, verdict = static_verdict(plain, marked.cubin, Request(noalias=True))
    assert legal, verdict
