"""`reorder check` / `reorder time` on the CPU: everything decided before the GPU is reached.

Spec-against-cubin validation, the no-GPU refusal (one line, exit 4, no traceback),
the wiring of the job handed to the worker, and the JobResult -> (lines, exit code)
mapping with hand-built results for every way a job can end.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reorder.base.errors import InputError, SpecError
from reorder.cli.main import main
from timing import cli_support as cs
from timing.worker import Job, JobResult

ROOT = Path(__file__).resolve().parent.parent
CUBIN = ROOT / "benchmarks" / "kernels" / "cubin" / "rmsnorm.cubin"
SPEC = ROOT / "benchmarks" / "kernels" / "specs" / "rmsnorm_triton_style.toml"

TIMED_ROW = {
    "check": "identical",
    "check_sets": 3,
    "check_detail": "identical on 3 input set(s)",
    "ratio": 0.97213,
    "ci_low": 0.9690,
    "ci_high": 0.9752,
    "ci_half_width_pct": 0.3195,
    "a_us": 12.3456,
    "b_us": 12.0012,
    "rounds": 412,
    "dropped_rounds": 3,
    "clock_mhz": 1980.0,
    "verdict": "faster",
    "l2": "warm",
    "method": "graph",
    "stopped": "target",
}
MISMATCH_ROW = {
    "check": "MISMATCH",
    "check_sets": 3,
    "check_detail": "buffer 'out' element [0, 5] (flat 5): ref 1.0 [0000803f] != cand nan [ffffffff]; "
    "1 element(s) differ",
}


def _spec_without(tmp_path: Path, param: str) -> Path:
    """A copy of the rmsnorm spec with one [[param]] table removed."""
    blocks = SPEC.read_text().split("[[param]]")
    kept = [b for b in blocks if f'name = "{param}"' not in b]
    assert len(kept) == len(blocks) - 1
    path = tmp_path / "broken.toml"
    path.write_text("[[param]]".join(kept))
    return path


def _run_cli(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reorder", *argv],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        cwd=ROOT,
        env=env,
    )


def _one_error_line(err: str, *needles: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


# ---------------------------------------------------------------- validation against a real cubin


def test_real_spec_validates_against_real_cubin() -> None:
    spec = cs.validated_spec(SPEC, [CUBIN, CUBIN])
    assert spec.name == "rmsnorm_triton_style" and len(spec.params) == 5


def test_kernel_option_must_name_the_spec_kernel() -> None:
    """A spec describes one kernel's parameters: --kernel naming another kernel of the same
    cubin is refused, never used with them (reorder.binary.kernelchoice)."""
    assert cs.validated_spec(SPEC, [CUBIN], "rmsnorm_triton_style").name == "rmsnorm_triton_style"
    with pytest.raises(InputError, match=r"--kernel 'rms_norm_f32' names rms_norm_f32 but .* make the two agree"):
        cs.validated_spec(SPEC, [CUBIN], "rms_norm_f32")


def test_param_sizes_in_ordinal_order() -> None:
    kernel = cs.entry_kernel(CUBIN, "rmsnorm_triton_style")
    assert cs.param_sizes(kernel) == [8, 8, 8, 4, 4]


def test_missing_param_is_spec_error(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"takes 5 parameter\(s\).*lists 4"):
        cs.validated_spec(_spec_without(tmp_path, "eps"), [CUBIN])


def test_wrong_param_size_names_the_param(tmp_path: Path) -> None:
    path = tmp_path / "wide.toml"
    path.write_text(SPEC.read_text().replace('dtype = "int32"', 'dtype = "int64"'))
    with pytest.raises(SpecError, match=r"param 'n_cols' \(#3\).*8 bytes.*4 bytes"):
        cs.validated_spec(path, [CUBIN])


def test_missing_kernel_is_input_error() -> None:
    with pytest.raises(InputError, match="no kernel named 'nosuch'"):
        cs.validated_spec(SPEC, [CUBIN], "nosuch")


@pytest.mark.parametrize("cmd", ["check", "time"])
def test_cli_missing_param_exit_2_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], cmd: str) -> None:
    broken = _spec_without(tmp_path, "eps")
    assert main([cmd, str(CUBIN), str(CUBIN), "--launch", str(broken)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    line = _one_error_line(err, f"reorder {cmd}: error:", "broken.toml", "takes 5 parameter(s)", "lists 4")
    assert "rmsnorm_triton_style" in line


@pytest.mark.parametrize("cmd", ["check", "time"])
def test_cli_missing_kernel_exit_2(capsys: pytest.CaptureFixture[str], cmd: str) -> None:
    assert main([cmd, str(CUBIN), str(CUBIN), "--launch", str(SPEC), "--kernel", "nosuch"]) == 2
    _one_error_line(capsys.readouterr().err, "no kernel named 'nosuch'", "rmsnorm.cubin")


def test_cli_missing_spec_file_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(CUBIN), str(CUBIN), "--launch", str(tmp_path / "none.toml")]) == 2
    _one_error_line(capsys.readouterr().err, "spec file not found")


@pytest.mark.parametrize("argv", [["check", "--sets", "0"], ["time", "--budget", "0"], ["time", "--target-ci", "-1"]])
def test_cli_bad_numbers_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    assert main([*argv, str(CUBIN), str(CUBIN), "--launch", str(SPEC)]) == 2
    _one_error_line(capsys.readouterr().err, argv[1])


# ---------------------------------------------------------------- no GPU


def _no_gpu_env() -> dict[str, str]:
    """No device even where cupy is installed: the natural case here, forced on a GPU machine."""
    return {**os.environ, "CUDA_VISIBLE_DEVICES": ""}


@pytest.mark.parametrize("cmd", ["check", "time"])
def test_no_gpu_one_line_exit_4(cmd: str) -> None:
    """No GPU has its own exit code (reorder.base.exitcodes), apart from bad input's 2."""
    done = _run_cli(cmd, str(CUBIN), str(CUBIN), "--launch", str(SPEC), env=_no_gpu_env())
    assert done.returncode == 4, done.stderr
    assert done.stdout == ""
    _one_error_line(done.stderr, f"reorder {cmd}: error: no CUDA GPU available")


def test_probe_reports_a_reason_without_a_device() -> None:
    reason = cs.gpu_unavailable_reason(env=_no_gpu_env())
    assert reason and "\n" not in reason


def test_probe_timeout_is_a_reason() -> None:
    assert "did not answer" in cs.gpu_unavailable_reason(timeout_s=1e-6)


def test_worker_device_respects_cuda_visible_devices() -> None:
    assert cs.worker_device({}) == 0
    assert cs.worker_device({"CUDA_VISIBLE_DEVICES": "3"}) is None


def test_run_one_runs_in_a_worker() -> None:
    r = cs.run_one(Job.of("timing.fake_jobs:add", 2, 3, timeout_s=30))
    assert r.ok and r.value == 5


# ---------------------------------------------------------------- the CLI hands the right job to the worker


@pytest.fixture
def fake_gpu(monkeypatch: pytest.MonkeyPatch):
    """Pretend a GPU is there and capture the job instead of running it."""
    jobs: list[Job] = []
    reply: list[JobResult] = []
    monkeypatch.setattr(cs, "require_gpu", lambda *a, **k: None)
    monkeypatch.setattr(cs, "run_one", lambda job: (jobs.append(job), reply[0])[1])
    return jobs, reply


def test_check_job_wiring(fake_gpu, capsys: pytest.CaptureFixture[str]) -> None:
    jobs, reply = fake_gpu
    reply.append(JobResult("ok", {"check": "identical", "check_sets": 5, "check_detail": ""}))
    assert main(["check", str(CUBIN), str(CUBIN), "--launch", str(SPEC), "--sets", "5", "--timeout", "30"]) == 0
    assert capsys.readouterr().out == "identical on 5 input sets\n"
    (job,) = jobs
    assert job.func == "timing.evaluate:check_job" and job.timeout_s == 30
    assert job.args[0] == job.args[1] == str(CUBIN.resolve())
    assert job.args[2].name == "rmsnorm_triton_style" and dict(job.kwargs) == {"sets": 5}


def test_time_job_wiring(fake_gpu, capsys: pytest.CaptureFixture[str]) -> None:
    jobs, reply = fake_gpu
    reply.append(JobResult("ok", TIMED_ROW))
    argv = [
        "time",
        str(CUBIN),
        str(CUBIN),
        "--launch",
        str(SPEC.with_name("rms_norm_f32.toml")),
        "--kernel",
        "rms_norm_f32",
        "--l2",
        "cold",
        "--method",
        "backtoback",
        "--target-ci",
        "1.5",
        "--budget",
        "4",
    ]
    assert main(argv) == 0
    assert "ratio B/A: 0.9721" in capsys.readouterr().out
    (job,) = jobs
    assert job.func == "timing.evaluate:check_and_time_job" and job.timeout_s == 4 + cs.TIME_SETUP_S
    assert job.args[2].name == "rms_norm_f32"
    assert dict(job.kwargs) == {"l2": "cold", "method": "backtoback", "target_ci_pct": 1.5, "budget_s": 4.0}


def test_crash_goes_to_stderr_exit_3(fake_gpu, capsys: pytest.CaptureFixture[str]) -> None:
    _, reply = fake_gpu
    reply.append(JobResult("crashed", reason="CUDARuntimeError: cudaErrorIllegalInstruction"))
    assert main(["check", str(CUBIN), str(CUBIN), "--launch", str(SPEC)]) == 3
    out, err = capsys.readouterr()
    assert out == "" and err == "reorder check: crashed: CUDARuntimeError: cudaErrorIllegalInstruction\n"


# ---------------------------------------------------------------- JobResult -> (lines, exit code)


def test_check_ok() -> None:
    o = cs.check_outcome(JobResult("ok", {"check": "identical", "check_sets": 3, "check_detail": "x"}))
    assert o == cs.Outcome(("identical on 3 input sets",), 0) and not o.to_stderr


def test_check_mismatch() -> None:
    o = cs.check_outcome(JobResult("ok", MISMATCH_ROW))
    assert o.exit_code == 1 and not o.to_stderr
    assert o.lines == ("MISMATCH: " + MISMATCH_ROW["check_detail"],)


def test_crashed() -> None:
    r = JobResult("crashed", reason="worker killed by signal SIGSEGV", error_type="WorkerDied")
    for outcome in (cs.check_outcome(r), cs.time_outcome(r)):
        assert outcome == cs.Outcome(("crashed: worker killed by signal SIGSEGV",), 3) and outcome.to_stderr


def test_timeout() -> None:
    r = JobResult("timeout", reason="no result within 130 s; worker pid 42 killed")
    for outcome in (cs.check_outcome(r), cs.time_outcome(r)):
        assert outcome.exit_code == 3 and outcome.lines == ("timeout: no result within 130 s; worker pid 42 killed",)


def test_error_in_job_keeps_its_exit_code() -> None:
    """A spec the job refuses is bad input (2); a cubin the driver refuses is a GPU failure (3)."""
    r = JobResult("error", reason="GpuError: b.cubin: cannot load kernel 'k'", error_type="GpuError")
    for outcome in (cs.check_outcome(r), cs.time_outcome(r)):
        assert outcome == cs.Outcome(("error: GpuError: b.cubin: cannot load kernel 'k'",), 3)
    r = JobResult("error", reason="SpecError: k.toml: param 'x'", error_type="SpecError")
    assert cs.check_outcome(r).exit_code == 2
    r = JobResult("error", reason="NoGpuError: no CUDA device visible", error_type="NoGpuError")
    assert cs.check_outcome(r).exit_code == 4


def test_time_mismatch_is_not_timed() -> None:
    o = cs.time_outcome(JobResult("ok", MISMATCH_ROW))
    assert o.exit_code == 1 and len(o.lines) == 1 and o.lines[0].startswith("MISMATCH: buffer 'out'")


def test_time_ok_report() -> None:
    o = cs.time_outcome(JobResult("ok", TIMED_ROW))
    assert o.exit_code == 0
    assert o.lines == (
        "check: identical on 3 input sets",
        "A: 12.346 us per launch",
        "B: 12.001 us per launch",
        "method graph, L2 warm, SM clock 1980 MHz, 412 rounds (3 dropped for a low SM clock), stopped on target",
        "ratio B/A: 0.9721  95% CI [0.9690, 0.9752] (+/-0.32%)  verdict: B is faster",  # the result: last
    )


def test_time_a_a_unknown_clock() -> None:
    row = {
        **TIMED_ROW,
        "check": "same-file",
        "check_sets": 0,
        "verdict": "indistinguishable",
        "clock_mhz": math.nan,
        "dropped_rounds": 0,
        "method": "backtoback",
        "l2": "cold",
        "stopped": "fixed",
    }
    lines = cs.time_outcome(JobResult("ok", row)).lines
    assert lines[0] == "check: skipped (A/A: the same cubin twice)"
    assert lines[4].endswith("verdict: indistinguishable")
    assert lines[3] == "method backtoback, L2 cold, SM clock unknown, 412 rounds, stopped on fixed"


def test_emit_streams(capsys: pytest.CaptureFixture[str]) -> None:
    assert cs.emit(cs.Outcome(("a", "b"), 0), "time") == 0
    assert cs.emit(cs.Outcome(("timeout: x",), 3), "time") == 3
    out, err = capsys.readouterr()
    assert out == "a\nb\n" and err == "reorder time: timeout: x\n"
