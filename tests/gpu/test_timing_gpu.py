"""GPU tests of timing: byte checking, isolation of faults and hangs, paired timing.

Kernels are compiled to cubins here with NVRTC (through cupy), one cubin per
variant of the same extern "C" kernel, so no nvcc is needed. Skips cleanly
without cupy or a device.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

import cupy  # noqa: E402  (tests/conftest.py collects this file only where a GPU is present)

from timing.check import check_pair  # noqa: E402
from timing.paired import time_pair  # noqa: E402
from timing.spec import load_spec  # noqa: E402
from timing.stats import verdict  # noqa: E402
from timing.worker import Job, WorkerPool  # noqa: E402

SOURCE = r"""
extern "C" __global__ void scale(const float* x, float* y, int n, float a) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
#if VARIANT == 2
    if (i >= n - 1) return;                   /* forgets the last element */
#else
    if (i >= n) return;
#endif
    float v = a * x[i];
#if VARIANT == 3
    float acc = x[i];
    for (int k = 0; k < 400; ++k) acc = __sinf(acc) + 1.0f;   /* same result, much slower */
    if (acc == 123456.0f) v += 1.0f;
#endif
#if VARIANT == 4
    y[i + (1 << 30)] = v;                      /* illegal address */
#endif
#if VARIANT == 5
    while (((volatile const float*)x)[0] != 123456.0f) { }   /* hangs */
#endif
    y[i] = v;
}
"""

SPEC = """
[kernel]
name = "scale"
grid = [4096]
block = [256]
seed = 7

[[param]]
name = "x"
kind = "buffer"
dtype = "float32"
shape = [1048576]
role = "in"
init = { dist = "normal" }

[[param]]
name = "y"
kind = "buffer"
dtype = "float32"
shape = [1048576]
role = "out"

[[param]]
name = "n"
kind = "scalar"
dtype = "int32"
value = 1048576

[[param]]
name = "a"
kind = "scalar"
dtype = "float32"
value = 2.5
"""


def compile_cubin(variant: int, out: Path) -> Path:
    from cupy_backends.cuda.libs import nvrtc

    major, minor = cupy.cuda.Device().compute_capability[:-1], cupy.cuda.Device().compute_capability[-1]
    prog = nvrtc.createProgram(SOURCE, "scale.cu", [], [])
    try:
        nvrtc.compileProgram(prog, [f"-arch=sm_{major}{minor}", f"-DVARIANT={variant}"])
        cubin = nvrtc.getCUBIN(prog)
    finally:
        nvrtc.destroyProgram(prog)
    path = out / f"scale_v{variant}.cubin"
    path.write_bytes(cubin)
    return path


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict:
    d = tmp_path_factory.mktemp("gpu")
    (d / "spec.toml").write_text(textwrap.dedent(SPEC))
    cubins = {v: compile_cubin(v, d) for v in (1, 2, 3, 4, 5)}
    return {"spec": load_spec(d / "spec.toml"), "cubins": cubins}


@pytest.fixture(scope="module")
def pool():
    with WorkerPool(devices=[0], startup_timeout_s=120) as p:
        yield p


def test_check_identical(env: dict) -> None:
    r = check_pair(env["cubins"][1], env["cubins"][1], env["spec"], sets=3)
    assert r.ok and r.sets == 3 and r.reference_deterministic


def test_check_slow_but_equal(env: dict) -> None:
    assert check_pair(env["cubins"][1], env["cubins"][3], env["spec"]).ok


def test_check_finds_unwritten_element(env: dict) -> None:
    r = check_pair(env["cubins"][1], env["cubins"][2], env["spec"])
    assert not r.ok and r.mismatch is not None
    assert r.mismatch.buffer == "y" and r.mismatch.flat_index == 1048575
    assert r.mismatch.cand_bytes == "ffffffff" and r.set_index == 0


def test_a_cubin_rewritten_at_one_path_runs_its_new_code(env: dict, tmp_path: Path) -> None:
    """One process, one path, two cubins in turn: the second load runs the second's code
    (cupy keeps a module per path; timing.gpu.load_kernel loads a copy named by the bytes)."""
    from timing import gpu
    from timing.check import compare_outputs, run_once
    from timing.inputmemo import drawn

    spec, path = env["spec"], tmp_path / "fast.cubin"
    host = drawn(spec, 0)
    path.write_bytes(env["cubins"][1].read_bytes())
    whole = run_once(gpu.load_kernel(path, spec), spec, host)
    path.write_bytes(env["cubins"][2].read_bytes())  # forgets the last element
    short = run_once(gpu.load_kernel(path, spec), spec, host)
    found = compare_outputs(whole, short)
    assert found is not None and found.flat_index == 1048575


def test_fault_is_crashed_in_worker_then_recovers(env: dict, pool: WorkerPool) -> None:
    c, spec = env["cubins"], env["spec"]
    bad = pool.run(Job.of(check_pair, str(c[1]), str(c[4]), spec, timeout_s=60))
    assert bad.status == "crashed", bad
    assert bad.reason
    good = pool.run(Job.of(check_pair, str(c[1]), str(c[1]), spec, timeout_s=60))
    assert good.ok and good.value.ok


def test_hang_is_timeout_in_worker_then_recovers(env: dict, pool: WorkerPool) -> None:
    c, spec = env["cubins"], env["spec"]
    hung = pool.run(Job.of(check_pair, str(c[1]), str(c[5]), spec, timeout_s=10))
    assert hung.status == "timeout", hung
    good = pool.run(Job.of(check_pair, str(c[1]), str(c[1]), spec, timeout_s=60))
    assert good.ok and good.value.ok


@pytest.mark.parametrize("l2", ["warm", "cold"])
def test_time_same_kernel_is_indistinguishable(env: dict, l2: str) -> None:
    c = env["cubins"]
    r = time_pair(c[1], c[1], env["spec"], l2=l2, target_ci_pct=0.5, budget_s=3.0)
    assert r.rounds >= 2 and r.a_us > 0 and r.b_us > 0
    assert r.ratio.low <= 1.0 <= r.ratio.high or abs(r.ratio.ratio - 1.0) < 0.01, r
    assert r.l2 == l2 and r.method == "graph"
    if l2 == "warm":
        assert r.launches_per_replay[0] * r.a_us >= 150.0
        assert r.launches_per_replay[1] * r.b_us >= 150.0
    else:
        assert r.launches_per_replay == (1, 1)


def test_time_slow_kernel_is_slower(env: dict, pool: WorkerPool) -> None:
    c = env["cubins"]
    res = pool.run(Job.of(time_pair, str(c[1]), str(c[3]), env["spec"], budget_s=3.0, timeout_s=120))
    assert res.ok, res
    r = res.value
    assert verdict(r.ratio) == "slower" and r.ratio.ratio > 1.1, r
    assert r.stopped in ("target", "budget", "max_rounds")
    assert r.launches_per_replay[0] > r.launches_per_replay[1]  # each kernel gets its own R


def test_backtoback_method(env: dict) -> None:
    c = env["cubins"]
    r = time_pair(c[1], c[3], env["spec"], method="backtoback")
    assert r.method == "backtoback" and r.rounds == 5 and r.stopped == "fixed"
    assert r.b_us > r.a_us


def test_each_kernel_launches_with_its_own_shared_memory(env: dict) -> None:
    """b_shared: B launched with more dynamic shared memory than A (a kernel that stages loads
    in shared memory against one that does not); the same kernel is still indistinguishable
    when the extra memory costs no occupancy."""
    c = env["cubins"]
    r = time_pair(c[1], c[1], env["spec"], budget_s=2.0, b_shared=env["spec"].shared + 1024)
    assert r.rounds >= 2 and r.a_us > 0 and r.b_us > 0
    assert r.ratio.low <= 1.0 <= r.ratio.high or abs(r.ratio.ratio - 1.0) < 0.02, r
