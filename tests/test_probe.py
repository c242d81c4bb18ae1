"""Probes: instruction templates, growing .text with every fix-up, probe builds, timeline analysis."""

from __future__ import annotations

import struct
import subprocess
import sys

import numpy as np
import pytest
from conftest import CORPUS, ROOT

from reorder.base.errors import EncodingError, InputError
from reorder.binary import branches
from reorder.binary.cubin import parse_cubin, read_cubin
from reorder.binary.nvinfo import ATTR_CBANK_PARAM_SIZE, ATTR_PARAM_CBANK
from reorder.binary.tools import have_tool, run_tool
from reorder.probe import templates as T
from reorder.probe.timeline import deltas, jumps, plot, point, read_csv, write_csv
from reorder.probe.variants import (
    ProbeLayout,
    build_slide,
    build_stamps,
    check_build,
    max_warps_per_sm,
    parse_range,
    probe_positions,
)
from reorder.sass.control import ControlCode
from reorder.sass.grow import Insertion, changed_originals, grow_kernel
from reorder.sass.model import decode_kernel, make_instruction

pytestmark = pytest.mark.skipif(not have_tool("ptxas"), reason="templates are compiled with ptxas")

SUITE = ROOT / "benchmarks" / "kernels" / "cubin" / "rmsnorm.cubin"
LAYOUT = ProbeLayout((256, 1, 1), (4, 1, 1))
# kernels with loops and forward branches, on both archs (checked-in copies: fast, stable)
KERNELS = [
    (CORPUS / "cubin" / a / f"{f}.cubin", k)
    for a in ("sm_80", "sm_90")
    for f, k in (("sync", "last_block_sum"), ("control", "collatz_steps"))
]


@pytest.fixture(scope="module")
def rms():
    return decode_kernel(read_cubin(SUITE), "rmsnorm_triton_style")


@pytest.mark.parametrize("arch", [80, 90])
def test_every_template_disassembles_as_intended(arch):
    items = [
        T.s2r(arch, 70, "SR_TID.X"),
        T.s2r(arch, 71, "SR_CTAID.Y"),
        T.s2r(arch, 75, "SR_VIRTUALSMID"),
        T.clock32(arch, 72),
        T.globaltimer64(arch, 74),
        T.imad(arch, 70, 71, 0x123, 72),
        T.shr5(arch, 70, 70),
        T.imad_wide(arch, 72, 70, 8, 72),
        T.uldc64(arch, 20, 0x208),
        T.stg64(arch, 20, 72, 0x10, 74),
        T.stg64(arch, 20, 72, 0, 74),
    ]
    items.append(T.ldc64(arch, 72, 0x230) if arch >= 90 else T.mov_const(arch, 72, 0x180))
    T.check_generated(items, arch)  # raises on any word that reads differently


def test_a_word_that_reads_wrong_is_refused():
    good = T.imad(90, 70, 71, 0x123, 72)
    lying = T.Generated(T.patch(good.word, "Rd", 9), good.opcode, good.operands)
    with pytest.raises(EncodingError, match="disassembles as"):
        T.check_generated([lying], 90)
    with pytest.raises(EncodingError, match="does not fit"):
        T.patch(good.word, "Rd", 256)


def _grow(code, every: int = 7):
    """Insert one CS2R.32 before every `every`-th instruction, plus a pointer parameter."""
    word = T.clock32(code.arch, 200).word
    inserts = [Insertion(i, (word,) * (1 + i % 2)) for i in range(0, len(code.instructions) - 1, every)]
    return grow_kernel(code, inserts, regcount=210, add_pointer_param=True)


@pytest.mark.parametrize("path,name", KERNELS, ids=lambda v: getattr(v, "name", v))
def test_grown_cubin_keeps_every_original_and_fixes_everything(path, name, tmp_path):
    code = decode_kernel(read_cubin(path), name)
    grown = _grow(code)
    new = parse_cubin(grown.data, "grown")
    kernel = new.kernel(name)
    assert changed_originals(code, kernel.text, grown) == ()
    assert len(kernel.text) % 128 == 0 and kernel.regcount == 210
    after = decode_kernel(new, name)
    by_offset = {i.offset: i for i in after.instructions}
    for ins in code.instructions:
        moved = by_offset[grown.new_offset_of[ins.offset]]
        assert moved.opcode == ins.opcode
        if ins.target is not None:  # branches still reach the same original instruction
            assert moved.target == grown.new_offset_of[ins.target]
    assert grown.retargeted, "the kernel has branches crossing insertions"
    for attr in kernel.attrs:
        if attr.name == "EIATTR_EXIT_INSTR_OFFSETS":
            assert all(by_offset[o].base == "EXIT" for o in attr.words())
    # the added parameter, the c-bank sizes and .nv.constant0 agree
    assert kernel.params[-1].size == 8 and kernel.params[-1].ordinal == len(code.kernel.params)
    size = kernel.attr(ATTR_CBANK_PARAM_SIZE)[0].value
    base, cbank = struct.unpack_from("<HH", kernel.attr(ATTR_PARAM_CBANK)[0].payload, 4)
    assert cbank == size == kernel.params[-1].offset + 8
    assert grown.param_offset == base + kernel.params[-1].offset
    assert new.section(f".nv.constant0.{name}").size == base + size
    # every other section keeps its alignment and bytes; tools read the file
    old = read_cubin(path)
    for s_old, s_new in zip(old.sections, new.sections):
        assert s_new.offset % max(1, _align(old, s_old)) == 0
        if s_old.type != 8 and s_old.name not in (
            f".text.{name}",
            f".nv.info.{name}",
            ".symtab",
            ".nv.info",
            f".nv.constant0.{name}",
        ):
            assert (
                new.data[s_new.offset : s_new.offset + s_new.size] == old.data[s_old.offset : s_old.offset + s_old.size]
            )
    out = tmp_path / "grown.cubin"
    out.write_bytes(grown.data)
    assert name in run_tool("cuobjdump", "-sass", str(out))
    assert "EIATTR_KPARAM_INFO" in run_tool("cuobjdump", "-elf", str(out))


def _align(cubin, section) -> int:
    return struct.unpack_from("<Q", cubin.data, section.header_offset + 48)[0]


def test_program_headers_cover_the_moved_sections(rms):
    grown = _grow(rms)
    new = parse_cubin(grown.data, "grown")
    (phoff,) = struct.unpack_from("<Q", new.data, 0x20)
    (phnum,) = struct.unpack_from("<H", new.data, 0x38)
    segments = [struct.unpack_from("<IIQQQQQQ", new.data, phoff + 56 * i) for i in range(phnum)]
    text = new.section(".text.rmsnorm_triton_style")
    const = new.section(".nv.constant0.rms_norm_f32")
    for sec in (text, const):
        assert any(s[1 - 1] == 1 and s[2] <= sec.offset and sec.offset + sec.size <= s[2] + s[5] for s in segments)
    assert any(s[0] == 6 and s[2] == phoff for s in segments)


def test_probe_positions_skip_reuse_and_dead_ends(rms):
    positions = set(probe_positions(rms))
    for k, ins in enumerate(rms.instructions[:-1]):
        if ins.ctrl.reuse or (ins.base in ("EXIT", "BRA") and not ins.guard):
            assert k not in positions
    assert parse_range("40-80", rms) == (4, 8)
    with pytest.raises(InputError):
        parse_range("80-40", rms)


@pytest.mark.parametrize(
    "path,name", [(SUITE, "rmsnorm_triton_style")] + KERNELS[::2], ids=lambda v: getattr(v, "name", v)
)
def test_probe_builds_are_bit_identical_and_legal(path, name):
    code = decode_kernel(read_cubin(path), name)
    positions = probe_positions(code)
    for k in positions[:: max(1, len(positions) // 4)][:4]:
        build = build_slide(code, k, LAYOUT)
        result = check_build(code, build)
        assert result.changed == () and result.violations == ()
        assert build.occupancy.regs_after >= build.occupancy.regs_before
        probe = [i for i in result.code.instructions if i.text.startswith("CS2R.32")]
        assert len(probe) == 2  # entry stamp + the probe after k


def test_prologue_handles_3d_shapes_and_stamps(rms):
    layout = ProbeLayout((8, 4, 2), (3, 2, 2))
    result = check_build(rms, build_slide(rms, 20, layout))
    assert result.changed == () and result.violations == ()
    texts = [i.text for i in result.code.instructions[:16]]
    assert any("SR_TID.Z" in t for t in texts) and any("SR_CTAID.Z" in t for t in texts)
    stamps = build_stamps(rms, probe_positions(rms)[::60], LAYOUT)
    checked = check_build(rms, stamps)
    assert checked.changed == () and checked.violations == ()
    assert stamps.record_bytes == 24 * len(stamps.positions)


def test_occupancy_model():
    assert max_warps_per_sm(32, 256) == 64
    assert max_warps_per_sm(36, 256) == 48  # 40 regs/thread after rounding: 6 blocks of 8 warps
    assert max_warps_per_sm(255, 1024) == 0 or max_warps_per_sm(255, 1024) == 32


def _ins(offset: int, text: str, ctrl: ControlCode):
    opcode, _, ops = text.partition(" ")
    word = ctrl.apply(0x7918)
    return make_instruction(offset, word, {"opcode": opcode, "operands": ops})


def test_jumps_name_the_waiter_and_its_load():
    plain = ControlCode(2, 1, 7, 7, 0, 0)
    code = [
        _ins(0x00, "LDG.E R2, [R4.64]", plain.with_(wbar=3)),
        _ins(0x10, "IADD3 R6, R6, 0x1, RZ", plain),
        _ins(0x20, "FADD R2, R2, R2", plain.with_(wait=1 << 3)),
        _ins(0x30, "FADD R7, R7, R7", plain),
    ]
    entry = np.full(64, 1000, dtype=np.uint32)
    issue = {0: 2, 1: 4, 2: 406, 3: 408}
    points = [point(code[k], k, np.stack([entry, entry + issue[k]], axis=-1)) for k in range(4)]
    assert points[2].cycles == 406 and points[2].samples == 64
    found = jumps(code, points)
    assert len(found) == 1 and found[0].offset == 0x20 and found[0].producer_offset == 0x00
    assert found[0].excess == pytest.approx(400)


def test_a_shared_scoreboard_names_the_load_the_waiter_reads():
    """Two loads on one scoreboard: the wait covers both, and the load named is the one
    whose result the waiting instruction reads (not merely the nearest)."""
    plain = ControlCode(2, 1, 7, 7, 0, 0)
    code = [
        _ins(0x00, "LDG.E R2, [R4.64]", plain.with_(wbar=2)),
        _ins(0x10, "LDG.E R3, [R4.64+0x4]", plain.with_(wbar=2)),
        _ins(0x20, "FADD R8, R2, R2", plain.with_(wait=1 << 2)),
        _ins(0x30, "FADD R9, R3, R3", plain),
    ]
    entry = np.full(32, 1000, dtype=np.uint32)
    issue = {0: 2, 1: 4, 2: 406, 3: 408}
    points = [point(code[k], k, np.stack([entry, entry + issue[k]], axis=-1)) for k in range(4)]
    found = jumps(code, points)
    assert len(found) == 1 and found[0].offset == 0x20 and found[0].producer_offset == 0x00


def test_unwritten_records_and_wraparound():
    records = np.array([[0xFFFFFFFF, 0xFFFFFFFF], [0xFFFFFFF0, 0x10], [5, 9]], dtype=np.uint32)
    assert sorted(deltas(records).tolist()) == [4, 32]


def test_timeline_csv_round_trip_and_plot(tmp_path):
    plain = ControlCode(2, 1, 7, 7, 0, 0)
    code = [_ins(16 * i, "FADD R7, R7, R7", plain) for i in range(5)]

    def recs(c: int) -> np.ndarray:
        return np.array([[0, c]] * 8, dtype=np.uint32)

    points = [point(code[k], k, recs(2 * k + (50 if k >= 3 else 0))) for k in range(5)]
    found = jumps(code, points)
    assert [j.at for j in found] == [3]
    a = write_csv(tmp_path / "a.csv", points, found)
    rows = read_csv(a)
    assert rows[3]["jump_cycles"] == "50.0"
    png = plot([("a", rows), ("b", rows)], tmp_path / "t.png")
    assert png.read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(InputError):
        read_csv(tmp_path / "missing.csv")
    with pytest.raises(InputError, match="overwrite"):
        plot([("a", rows)], a, protect=[a])
    assert read_csv(a) == rows  # the input survived
    binary = tmp_path / "binary.csv"
    binary.write_bytes(bytes(range(256)))  # not text at all
    truncated = tmp_path / "truncated.csv"
    truncated.write_text(a.read_text()[:200])  # the header and a cut-off first row
    for bad in (binary, truncated):
        with pytest.raises(InputError, match="not a timeline CSV"):
            read_csv(bad)


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "reorder", *args], capture_output=True, text=True, cwd=ROOT, check=False
    )


def test_cli_probe_build_only_and_bad_input(tmp_path):
    spec = ROOT / "benchmarks" / "kernels" / "specs" / "rmsnorm_triton_style.toml"
    done = _cli("probe", str(SUITE), "--launch", str(spec), "--range", "400-440", "--build-only", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert len(list(tmp_path.glob("*.cubin"))) >= 3 and "bit-identical" in done.stdout
    bad = _cli("probe", str(SUITE), "--launch", str(spec), "--range", "zz")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--range" in bad.stderr
    csv_bad = tmp_path / "x.csv"
    csv_bad.write_text("a,b\n1,2\n")
    bad = _cli("timeline", str(csv_bad), "-o", str(tmp_path / "t.png"))
    assert bad.returncode == 2 and "not a timeline CSV" in bad.stderr


def test_every_pc_relative_immediate_decodes_like_nvdisasm():
    """BRA and BSSY (whose sm_90 Rd slot holds its barrier register, not immediate bits)."""
    seen = set()
    for path in sorted((CORPUS / "cubin").glob("sm_*/*.cubin")):
        cubin = read_cubin(path)
        for kernel in cubin.kernels:
            for ins in decode_kernel(cubin, kernel.name).instructions:
                if ins.target is None or ins.operands[0].startswith(("UR", "R")):
                    continue
                assert branches.decode_target(ins.word, cubin.arch, ins.offset, ins.base) == ins.target
                moved = branches.encode_target(ins.word, cubin.arch, ins.offset + 48, ins.target, ins.base)
                assert branches.decode_target(moved, cubin.arch, ins.offset + 48, ins.base) == ins.target
                seen.add((cubin.arch, ins.base))
    assert {(90, "BSSY"), (90, "BRA"), (80, "BSSY"), (80, "BRA")} <= seen


def test_region_stamps_build_and_decode(rms, tmp_path):
    """Stamps after three phase boundaries: originals kept, verifier accepts, and the
    records decode to one row per warp and stamp with block and SM (unwritten: none)."""
    from reorder.probe.run import stamp_rows
    from reorder.probe.variants import build_stamps, check_build

    build = build_stamps(rms, [0, 187, 263], LAYOUT)
    result = check_build(rms, build)
    assert not result.changed and not result.violations
    assert build.record_bytes == 3 * 24
    warps = LAYOUT.warps
    words = np.full((1, warps, 18), 0xFFFFFFFF, dtype=np.uint32)
    for w in range(warps - 1):  # the last warp never reached any stamp
        for n in range(3):
            words[0, w, 6 * n : 6 * n + 6] = [1000 + n, 1, 50 * n, w % 7, 1032 + n, 1]
    rows = stamp_rows(build, rms, words)
    assert len(rows) == 3 * (warps - 1)
    assert rows[4]["warp"] == 1 and rows[4]["stamp"] == 1 and rows[4]["block"] == 0
    assert rows[4]["globaltimer_ns"] == (1 << 32) + 1001 and rows[4]["clock"] == 50 and rows[4]["sm"] == 1
    assert rows[4]["globaltimer_after_ns"] == (1 << 32) + 1033
    listing = [i.text for i in result.code.instructions]
    timer_reads = [k for k, t in enumerate(listing) if "SR_GLOBALTIMERLO" in t]
    clock_reads = [k for k, t in enumerate(listing) if "SR_CLOCKLO" in t]
    assert len(timer_reads) == 6 and len(clock_reads) == 3
    assert all(timer_reads[2 * n] < clock_reads[n] < timer_reads[2 * n + 1] for n in range(3))


def test_cli_region_stamps_build_only(tmp_path):
    spec = tmp_path / "rms.toml"
    import tomllib

    from reorder.suite.sweep import apply_sweep, spec_toml

    raw = dict(
        apply_sweep(
            tomllib.loads((ROOT / "benchmarks/kernels/specs/rmsnorm_triton_style.toml").read_text()), {"rows": 4}
        )
    )
    raw.pop("grid_sweep", None)
    spec.write_text(spec_toml(raw))
    base = [sys.executable, "-m", "reorder", "probe", str(SUITE), "--launch", str(spec)]
    done = subprocess.run(
        base + ["--stamps", "bb0,1080", "--build-only", str(tmp_path)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "originals changed: 0, verifier violations: 0" in done.stdout
    bad = subprocess.run(
        base + ["--stamps", "10a0", "--build-only", str(tmp_path)], capture_output=True, text=True, check=False
    )
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1


def test_one_warp_blocks_and_imad_aliases(rms):
    """Bug reproducer: with 32-thread blocks the prologue multiplies by 1, which nvdisasm
    prints as IMAD.IADD (and by 0 as IMAD.MOV); the template check must expect the alias."""
    for imm, name in ((0, "IMAD.MOV"), (1, "IMAD.IADD"), (2, "IMAD")):
        generated = T.imad(90, 10, 11, imm, 12)
        assert generated.opcode == name
        T.check_generated([generated], 90)
    build = build_slide(rms, 200, ProbeLayout((32, 1, 1), (3, 1, 1)))
    result = check_build(rms, build)
    assert not result.changed and not result.violations


def test_measure_variants_splits_points_from_failures(rms):
    """The pool's results become measured points, and a faulting variant a (position, reason)."""
    from pathlib import Path
    from types import SimpleNamespace

    from reorder.probe.run import measure_variants

    entry = np.full(8, 100, dtype=np.uint32)
    records = np.stack([entry, entry + 40], axis=-1)[None]

    class Pool:
        def map(self, jobs):
            assert len(jobs) == 2
            return [
                SimpleNamespace(ok=True, value=records, status="ok", reason=""),
                SimpleNamespace(ok=False, value=None, status="crashed", reason="illegal address"),
            ]

    points, failed = measure_variants(Pool(), rms, [(200, Path("a.cubin")), (201, Path("b.cubin"))], None)
    assert [p.index for p in points] == [200] and points[0].cycles == 40
    assert failed == [(201, "crashed: illegal address")]
