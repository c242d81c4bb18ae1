"""Foundation: cubin reading, the SASS model, round trips, and bad input."""

from __future__ import annotations

import re
import struct
import subprocess
import sys

import pytest
from conftest import CORPUS, corpus_files
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sweeps import at_least, sample  # tests/sweeps.py

from reorder.base.errors import InputError, ReorderError
from reorder.base.files import write_atomic
from reorder.binary import branches
from reorder.binary.cubin import parse_cubin, read_cubin
from reorder.binary.nvinfo import encode_nv_info, parse_nv_info
from reorder.binary.tools import run_tool
from reorder.sass.control import ControlCode
from reorder.sass.writer import patch_kernel


def test_corpus_is_large_enough(corpus):
    kernels = {(c.arch, code.kernel.name) for c, code in corpus if code.kernel.is_entry}
    assert len([k for k in kernels if k[0] == 80]) >= 30
    assert len([k for k in kernels if k[0] == 90]) >= 30


def test_checked_in_copies_exist_for_every_source():
    sources = {p.stem for p in (CORPUS / "src").glob("*.cu")}
    for arch in ("sm_80", "sm_90"):
        assert {p.stem for p in (CORPUS / "cubin" / arch).glob("*.cubin")} == sources


def test_control_code_round_trip_every_instruction(corpus):
    for _, code in corpus:
        for ins in code.instructions:
            assert ControlCode.from_word(ins.word).apply(ins.word) == ins.word
            assert ins.bytes == code.kernel.text[ins.offset : ins.offset + 16]


def test_writing_unchanged_order_is_byte_identical(corpus):
    for cubin, code in corpus:
        assert patch_kernel(cubin, code.kernel, code.instructions) == cubin.data


def test_nv_info_sections_round_trip(corpus_dir):
    for path in corpus_files(corpus_dir):
        cubin = read_cubin(path)
        for s in cubin.sections:
            if s.type == 0x70000000:
                blob = cubin.data[s.offset : s.offset + s.size]
                assert encode_nv_info(parse_nv_info(blob, s.name)) == blob


def _nvdisasm_listing(path) -> dict[str, list[tuple[int, str]]]:
    """function -> [(offset, normalized text)] from nvdisasm's plain listing, labels resolved."""
    text = run_tool("nvdisasm", "-c", str(path))
    labels = {m.group(1): int(m.group(2), 16) for m in re.finditer(r"^(\.L_x_\d+):\n\s*/\*([0-9a-f]+)\*/", text, re.M)}
    out: dict[str, list[tuple[int, str]]] = {}
    current = None
    for line in text.splitlines():
        head = re.match(r"^\s*\.text\.(\S+):$", line) or re.match(r"^\s*\.section\s+\.text\.([^,]+),", line)
        if head:
            current = head.group(1)
            out.setdefault(current, [])
            continue
        m = re.match(r"^\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;\s*(?:/\*.*)?$", line)
        if m and current:
            body = re.sub(
                r"`\(([^)]+)\)", lambda g: hex(labels[g.group(1)]) if g.group(1) in labels else g.group(1), m.group(2)
            )
            out[current].append((int(m.group(1), 16), " ".join(body.split())))
    return out


def _normalize(text: str) -> str:
    """Same tokens in the same order: commas and spacing differ between the JSON and text forms."""
    text = re.sub(r'\(\*".*?"\*\)', "", text)  # nvdisasm's BRANCH_TARGETS annotation on BRX
    return " ".join(text.replace(",", " ").split())


@pytest.mark.slow
def test_instruction_text_matches_nvdisasm(corpus, corpus_dir):
    """Every cubin of both archs (the CPU tier: every fourth one, tests/sweeps.py)."""
    listings = {str(p): _nvdisasm_listing(p) for p in sample(corpus_files(corpus_dir))}
    assert {read_cubin(p).arch for p in listings} == {80, 90}
    checked = 0
    for cubin, code in corpus:
        if cubin.path not in listings:
            continue
        listing = dict(listings[cubin.path][code.kernel.name])
        for ins in code.instructions:
            assert _normalize(ins.text) == _normalize(listing[ins.offset]), (cubin.path, hex(ins.offset))
            checked += 1
    assert checked > at_least(8000, 1500)


def test_branch_targets_decode_like_nvdisasm(corpus):
    seen = 0
    for cubin, code in corpus:
        for ins in code.instructions:
            if ins.base == "BRA" and ins.target is not None and not ins.operands[0].startswith(("UR", "R")):
                assert branches.decode_target(ins.word, cubin.arch, ins.offset) == ins.target
                moved = branches.encode_target(ins.word, cubin.arch, ins.offset + 32, ins.target)
                assert branches.decode_target(moved, cubin.arch, ins.offset + 32) == ins.target
                assert branches.encode_target(moved, cubin.arch, ins.offset, ins.target) == ins.word
                seen += 1
    assert seen > 200


def test_kernel_metadata(corpus):
    for cubin, code in corpus:
        k = code.kernel
        if k.is_entry:
            assert k.regcount > 0
            assert [p.ordinal for p in k.params] == list(range(len(k.params)))
        if cubin.arch == 80:
            assert k.regcount_in_sh_info == k.regcount


def _cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "reorder", *args], capture_output=True, text=True, check=False)


def _one_sample(corpus_dir):
    return next(p for p in corpus_files(corpus_dir) if p.parent.name == "sm_90")


@pytest.mark.parametrize(
    "name", ["empty", "random", "truncated", "host_elf", "fatbin", "bad_shoff", "sm_100", "et_rel"]
)
def test_bad_input_gives_one_line_and_exit_2(tmp_path, corpus_dir, name):
    good = _one_sample(corpus_dir).read_bytes()
    with open(sys.executable, "rb") as host:
        host_elf = host.read(4096)
    data = {
        "empty": b"",
        "random": bytes(range(256)) * 4,
        "truncated": good[: len(good) // 3],
        "host_elf": host_elf,
        "fatbin": struct.pack("<IHH", 0xBA55ED50, 1, 16) + good,
        "bad_shoff": good[:0x28] + struct.pack("<Q", 10**9) + good[0x30:],
        "sm_100": good[:0x30]
        + struct.pack("<I", (struct.unpack_from("<I", good, 0x30)[0] & ~0xFF00) | (100 << 8))
        + good[0x34:],
        "et_rel": good[:0x10] + struct.pack("<H", 1) + good[0x12:],
    }[name]
    bad = tmp_path / f"{name}.cubin"
    bad.write_bytes(data)
    out = tmp_path / "out.cubin"
    for cmd in (["disasm", str(bad)], ["verify", str(bad)]):
        done = _cli(*cmd)
        assert done.returncode == 2, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
        assert "Traceback" not in done.stderr
    assert not out.exists()


def test_disasm_json_fields(corpus_dir):
    import json

    done = _cli("disasm", str(_one_sample(corpus_dir)), "--json")
    assert done.returncode == 0
    doc = json.loads(done.stdout)
    record = doc[0]["instructions"][0]
    for key in ("offset", "opcode", "text", "stall", "yield", "wbar", "rbar", "wait", "reuse"):
        assert key in record


def test_disasm_text_notation(corpus_dir):
    done = _cli("disasm", str(_one_sample(corpus_dir)))
    assert done.returncode == 0
    assert re.search(r"/\*0000\*/\s+B[0-5-]{6}:R[0-5-]:W[0-5-]:[Y-]:S\d\d", done.stdout)


def test_write_atomic_refuses_input(tmp_path):
    src = tmp_path / "a.cubin"
    src.write_bytes(b"x")
    with pytest.raises(InputError):
        write_atomic(src, b"y", protect=[src])
    assert src.read_bytes() == b"x"
    write_atomic(tmp_path / "b.cubin", b"y", protect=[src])
    assert (tmp_path / "b.cubin").read_bytes() == b"y"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_cubins_only_parse_or_raise_our_error(corpus_dir, data):
    good = bytearray(_one_sample(corpus_dir).read_bytes())
    for _ in range(data.draw(st.integers(1, 8))):
        pos = data.draw(st.integers(0, len(good) - 1))
        good[pos] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(good)))
    blob = bytes(good[:cut]) if data.draw(st.booleans()) else bytes(good)
    try:
        cubin = parse_cubin(blob, "mutant")
    except ReorderError:
        return
    assert cubin.kernels is not None


TRITON = sorted((CORPUS / "triton" / "sm_90").glob("*.cubin"))


def test_triton_cubins_read_round_trip_and_match_nvdisasm():
    """Cubins as Triton 3.9 emits them (tests/corpus/triton/build.py): an RMSNorm and an
    fp16 GEMM with warpgroup MMA, whose HGMMA/WARPGROUP ops are kept as barriers."""
    from reorder.sass.model import decode_kernel

    assert len(TRITON) == 2
    unknown = set()
    for path in TRITON:
        cubin = read_cubin(path)
        assert cubin.arch == 90
        listing = _nvdisasm_listing(path)
        for kernel in cubin.kernels:
            code = decode_kernel(cubin, kernel.name)
            assert patch_kernel(cubin, kernel, code.instructions) == cubin.data
            expected = dict(listing[kernel.name])
            for ins in code.instructions:
                assert _normalize(ins.text) == _normalize(expected[ins.offset]), (path.name, hex(ins.offset))
            unknown |= {i.base for i in code.instructions if not i.known}
            assert kernel.regcount == code.registers_used() + 2
        done = _cli("verify", str(path))
        assert done.returncode in (0, 1) and "Traceback" not in done.stderr
    assert "HGMMA" in unknown


def test_an_instruction_pickles_by_its_fields_and_the_receiver_hashes_it_anew(tmp_path) -> None:
    """Instruction keeps its hash (reorder.sass.model). A pickle must not carry it: strings hash
    differently in every process, and a stale hash would miss every dict and memo lookup in
    the build workers. `_fields` must also name every init field, or a pickle drops one."""
    import dataclasses
    import pickle

    from reorder.sass.model import Instruction, decode_kernel

    assert [f.name for f in dataclasses.fields(Instruction) if f.init] == [
        "offset",
        "word",
        "opcode",
        "operands",
        "guard",
        "access",
        "known",
        "target",
        "has_relocation",
        "indirect_targets",
        "arch",  # not hashed or compared; carried by __reduce__ after the hashed fields
    ]
    cubin = read_cubin(CORPUS / "cubin" / "sm_90" / "elementwise.cubin")
    ins = decode_kernel(cubin, cubin.kernels[0].name).instructions[:8]
    assert all(len(i._fields()) == 10 for i in ins)
    data = pickle.dumps(ins)
    script = (
        "import pickle, sys; from dataclasses import replace; ins = pickle.loads(sys.stdin.buffer.read()); "
        "print(all(hash(i) == hash(replace(i)) and i == replace(i) for i in ins))"
    )
    env = {"PYTHONHASHSEED": "12345", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", script], input=data, capture_output=True, env=env, check=True)
    assert out.stdout.strip() == b"True"
    assert pickle.loads(data) == ins and hash(pickle.loads(data)) == hash(ins)
    assert {i.arch for i in pickle.loads(data)} == {90}  # the receiver knows which ops are variable latency
