"""CPU tests of `reorder latency-probe`: chain kernels, locating, stall variants, outputs, CLI without a GPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sweeps import FULL, sample  # tests/sweeps.py

from legality.silicon import latency_probe as lp
from legality.silicon import probe_chains as pc
from reorder.binary.cubin import read_cubin
from reorder.binary.tools import have_tool
from reorder.sass.control import CONTROL_SHIFT, ControlCode

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REQUIRED = (
    "FFMA FADD FMUL DFMA DADD IMAD IMAD.IADD IADD3 LOP3 SHF LEA PRMT SEL MOV HADD2 HFMA2 I2FP "
    "FSETP->guarded ISETP->guarded ISETP->SEL ISETP->branch LOP3->IMAD IMAD->IADD3"
).split()
# what ptxas 13.0 emits for these chains; a pair missing here must be reported, not guessed
EXPECTED_LOCATED = set(REQUIRED) - {"MOV"}
# The pairs the module builds: those its tests name, then every fourth required one (every pair
# under REORDER_FULL_SWEEPS=1: tests/sweeps.py).
NAMED = ("FFMA", "DFMA", "LOP3->IMAD", "ISETP->branch", "FSETP->guarded", "MOV")
BUILT = tuple(dict.fromkeys([*NAMED, *sample(REQUIRED)]))

ROOT = Path(__file__).resolve().parent.parent
CLI = ("-c", "import sys; from reorder.cli.main import main; sys.exit(main(sys.argv[1:]))")
needs_nvcc = pytest.mark.skipif(not (have_tool("nvcc") and have_tool("nvdisasm")), reason="needs nvcc and nvdisasm")

STALL_BITS = 0xF << CONTROL_SHIFT
YIELD_BIT = 1 << (CONTROL_SHIFT + 4)
REUSE_BITS = 0x7 << (CONTROL_SHIFT + 17)


def test_every_required_pair_has_a_spec():
    assert set(REQUIRED) <= set(pc.PAIR_BY_NAME)
    for pair in pc.PAIRS:
        src = pc.cuda_source(pair)
        assert pc.kernel_name(pair) in src and src.count("clock64()") == 2


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    if not (have_tool("nvcc") and have_tool("nvdisasm")):
        pytest.skip("needs nvcc and nvdisasm")
    folder = tmp_path_factory.mktemp("probe")
    pairs = pc.PAIRS if FULL else [p for p in pc.PAIRS if p.name in BUILT]
    return folder, pc.build_all(folder, pairs)


@needs_nvcc
def test_required_pairs_located_or_reported(built):
    folder, rows = built
    by_name = {b.pair: b for b in rows}
    assert set(BUILT) <= set(by_name)
    for name in BUILT:
        b = by_name[name]
        if b.located.ok:
            assert b.located.edges >= pc.LINKS // 2 - 4
            assert len(b.variants) == len(pc.STALLS)
            assert set(b.verifier_ok) == set(pc.STALLS)
        else:
            assert b.located.reason.startswith("not generated"), (name, b.located.reason)
            assert not b.variants
    located = {n for n in BUILT if by_name[n].located.ok}
    assert located >= (EXPECTED_LOCATED & set(BUILT)) - {"ISETP->branch"}, sorted(EXPECTED_LOCATED - located)
    manifest = pc.read_manifest(folder)
    assert {e["pair"] for e in manifest["pairs"]} == set(by_name)


@needs_nvcc
def test_located_chains_have_the_expected_shape(built):
    _, rows = built
    by_name = {b.pair: b.located for b in rows}
    assert (by_name["FFMA"].producer_class, by_name["FFMA"].consumer_class) == ("FMAI", "FMAI")
    assert (by_name["DFMA"].producer_class, by_name["DFMA"].consumer_class) == ("FMALITE", "FMALITE")
    assert by_name["LOP3->IMAD"].producer_opcode.startswith("LOP3")
    assert by_name["LOP3->IMAD"].consumer_opcode == "IMAD"
    if by_name["ISETP->branch"].ok:
        assert by_name["ISETP->branch"].consumer_opcode == "BRA"
    assert by_name["FSETP->guarded"].consumer_class == "FMAI"


@needs_nvcc
def test_variants_change_only_the_stall_bits_of_the_producers(built):
    folder, rows = built
    for b in rows:
        if not b.located.ok:
            continue
        original = read_cubin(folder / b.original)
        kernel = original.kernel(b.kernel)
        producers = set(b.located.producers)
        start, end = kernel.text_offset, kernel.text_offset + len(kernel.text)
        for s, rel in b.variants.items():
            data = (folder / rel).read_bytes()
            assert len(data) == len(original.data)
            assert data[:start] == original.data[:start] and data[end:] == original.data[end:], (b.pair, s)
            allowed = STALL_BITS | ((YIELD_BIT | REUSE_BITS) if s >= 12 else 0)
            for off in range(0, len(kernel.text), 16):
                old = int.from_bytes(original.data[start + off : start + off + 16], "little")
                new = int.from_bytes(data[start + off : start + off + 16], "little")
                if off not in producers:
                    assert old == new, (b.pair, s, hex(off))
                    continue
                assert (old ^ new) & ~allowed == 0, (b.pair, s, hex(off))
                ctrl = ControlCode.from_word(new)
                assert ctrl.stall == s
                assert ctrl.encoding_problem() is None, (b.pair, s, hex(off), ctrl.encoding_problem())
                if s >= 12:
                    assert ctrl.yield_bit == 0
                else:
                    assert ctrl.yield_bit == ControlCode.from_word(old).yield_bit


@needs_nvcc
def test_variants_keep_every_control_code_encodable(built):
    folder, rows = built
    for b in rows:
        for s, rel in b.variants.items():
            k = read_cubin(folder / rel).kernel(b.kernel)
            for off in range(0, len(k.text), 16):
                ctrl = ControlCode.from_word(int.from_bytes(k.text[off : off + 16], "little"))
                assert ctrl.encoding_problem() is None, (b.pair, s, hex(off))


@needs_nvcc
def test_verifier_accepts_the_compiler_stall(built):
    _, rows = built
    for b in rows:
        if b.located.ok and b.original_verifier_ok:
            ptxas = max(b.located.ptxas_stalls)
            assert all(b.verifier_ok[s] for s in pc.STALLS if s >= ptxas), b.pair


def test_locate_reports_a_chain_ptxas_did_not_emit():
    loc = pc.locate_chain(pc.PAIR_BY_NAME["MOV"], ())
    assert not loc.ok and loc.reason.startswith("not generated")


def test_inputs_are_deterministic_and_sized():
    for kind in {p.inputs for p in pc.PAIRS}:
        a, b = pc.make_inputs(kind, 7, 64), pc.make_inputs(kind, 7, 64)
        assert a.dtype == np.uint32 and a.shape == (64, pc.WORDS)
        assert np.array_equal(a, b)
        assert not np.array_equal(a, pc.make_inputs(kind, 8, 64))


def test_floor_is_the_lowest_stall_with_everything_above_correct():
    st = dict.fromkeys(range(1, 16), "correct")
    assert lp.floor_of(st) == 1
    st.update({1: "wrong", 2: "wrong", 3: "correct", 4: "wrong"})
    assert lp.floor_of(st) == 5
    st[15] = "error"
    assert lp.floor_of(st) is None


# --------------------------------------------------------------------------- the GPU side, with a fake cupy


class _Arr:
    def __init__(self, a):
        self.a = a

    def fill(self, v):
        self.a[...] = v

    def get(self):
        return self.a.copy()

    def __getitem__(self, k):
        return _Arr(self.a[k])


class _FakeCupy:
    """Emulates a chain whose result is wrong below `floor` (and at the stalls in `also_wrong`)."""

    uint32, int64 = np.uint32, np.int64

    def __init__(self, floor: int, also_wrong: tuple[int, ...] = ()):
        self.floor, self.also_wrong = floor, also_wrong
        fake = self

        class _Cuda:
            class runtime:
                @staticmethod
                def getDeviceProperties(i):
                    return {"name": b"Fake H200"}

            class Device:
                id = 0

            @staticmethod
            def get_current_stream():
                class S:
                    def synchronize(self):
                        pass

                return S()

        self.cuda = _Cuda

        class RawModule:
            def __init__(self, path):
                self.path = path

            def get_function(self, name):
                stem = Path(self.path).stem
                s = int(stem[1:]) if stem.startswith("s") else 99

                def fn(grid, block, args):
                    inputs, out, clk = args
                    words = inputs.a.reshape(-1, pc.WORDS)
                    res = words[:, : pc.OUT_WORDS] * np.uint32(3) + np.uint32(1)
                    if s < fake.floor or s in fake.also_wrong:
                        res = res + np.uint32(1)
                    out.a[:] = res.reshape(-1)
                    clk.a[:] = min(s, 8) * pc.LINKS + 20

                return fn

        self.RawModule = RawModule

    def zeros(self, n, dtype):
        return _Arr(np.zeros(n, dtype))

    def asarray(self, a):
        return _Arr(np.asarray(a))


def _entry(verifier_from: int) -> dict:
    return {
        "pair": "LOP3->IMAD",
        "kernel": "probe_lop3__imad",
        "located": True,
        "reason": "",
        "original": "orig.cubin",
        "producer_opcode": "LOP3.LUT",
        "consumer_opcode": "IMAD",
        "producer_class": "FXU",
        "consumer_class": "IMAD",
        "kind": "raw",
        "ptxas_stalls": [5] * 32,
        "edges": 32,
        "inputs": "u32",
        "variants": {str(s): f"s{s:02d}.cubin" for s in pc.STALLS},
        "verifier_ok": {str(s): s >= verifier_from for s in pc.STALLS},
    }


def test_probe_pair_finds_the_floor_and_flags_an_unsafe_verifier(tmp_path):
    row = lp.probe_pair(_entry(3), tmp_path, seeds=(1, 2), cp=_FakeCupy(floor=4))
    assert row.status == "measured" and row.floor == 4 and row.wrong_stalls == [1, 2, 3]
    assert row.verifier_unsafe == [3] and lp.unsafe_rows([row]) == [row]
    assert row.cycles_per_link_at_floor == pytest.approx((4 * pc.LINKS + 20) / pc.LINKS, abs=0.01)
    assert row.input_sets == 4 and row.below_ptxas
    assert "UNSAFE" in lp.table([row])

    safe = lp.probe_pair(_entry(5), tmp_path, seeds=(1,), cp=_FakeCupy(floor=1, also_wrong=(2, 3)))
    assert safe.floor == 4 and not safe.verifier_unsafe and safe.correct_stalls == [1] + list(range(4, 16))


def test_outputs_csv_and_toml(tmp_path):
    rows = [
        lp.probe_pair(_entry(5), tmp_path, seeds=(1,), cp=_FakeCupy(floor=4)),
        lp.probe_pair(
            _entry(5) | {"pair": "I2FP", "consumer_opcode": "IMAD.IADD"}, tmp_path, seeds=(1,), cp=_FakeCupy(floor=6)
        ),
        lp.probe_pair(_entry(5) | {"pair": "X"}, tmp_path, seeds=(1,), cp=_FakeCupy(floor=16)),
        lp.PairResult("MOV", "not generated", kind="raw", note="not generated: ..."),
    ]
    assert rows[2].status == "no floor" and rows[2].floor is None
    csv_path, toml_path = tmp_path / "r.csv", tmp_path / "m.toml"
    lp.write_outputs(rows, 90, "Fake H200", csv_path, toml_path)
    lines = csv_path.read_text().splitlines()
    assert lines[0].startswith("gpu,date,commit,pair,status,") and len(lines) == 5
    assert lines[1].startswith("Fake H200,")
    doc = tomllib.loads(toml_path.read_text())
    assert len(doc["entry"]) == 1
    e = doc["entry"][0]
    assert (e["producer"], e["consumer"], e["kind"], e["cycles"]) == ("FXU", "IMAD", "raw", 6)  # largest floor
    assert "measured on Fake H200" in e["provenance"] and "WRONG->CORRECT over 2 input sets" in e["provenance"]
    assert all(1 <= x["cycles"] <= 15 for x in doc["entry"])


# --------------------------------------------------------------------------- CLI


def _gpu_present() -> bool:
    try:
        from timing.gpu import cupy_module

        cupy_module()
    except Exception:  # noqa: BLE001
        return False
    return True


@pytest.mark.skipif(_gpu_present(), reason="a GPU is present")
@pytest.mark.parametrize(
    "argv",
    [
        [*CLI, "latency-probe", "--arch", "sm_90"],
        ["-m", "benchmarks.latency_probe_gpu", "--run", "nowhere", "--out", "x"],
    ],
)
def test_without_a_gpu_one_line_and_exit_4(argv, tmp_path):
    # benchmarks/ is a checkout's folder, not installed: the child finds it on PYTHONPATH
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, *argv],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": path},
    )
    assert done.returncode == 4, done.stderr  # no GPU: reorder.base.exitcodes.NO_GPU
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and done.stdout == ""


@needs_nvcc
def test_cli_build_only(tmp_path):
    done = subprocess.run(
        [sys.executable, *CLI, "latency-probe", "--build-only", "--pairs", "FFMA,MOV", "--build-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "FFMA             located" in done.stdout and "MOV              not generated" in done.stdout
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert [e["pair"] for e in manifest["pairs"]] == ["FFMA", "MOV"]
    assert len(manifest["pairs"][0]["variants"]) == 15


def test_unknown_pair_is_an_input_error():
    from reorder.base.errors import InputError

    with pytest.raises(InputError):
        pc.selected_pairs("FFMA,NOPE")
