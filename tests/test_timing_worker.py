"""Process isolation: every way a job can end gives the right status, and the next job still runs."""

from __future__ import annotations

import time

import pytest

from timing import fake_jobs
from timing.worker import Job, JobResult, WorkerPool, resolve


@pytest.fixture(scope="module")
def pool():
    with WorkerPool(devices=[None], startup_timeout_s=30) as p:
        yield p


def test_ok(pool: WorkerPool) -> None:
    r = pool.run(Job.of(fake_jobs.add, 2, 3, timeout_s=10))
    assert isinstance(r, JobResult)
    assert r.ok and r.status == "ok" and r.value == 5 and r.reason == ""


def test_kwargs(pool: WorkerPool) -> None:
    assert pool.run(Job.of("timing.fake_jobs:add", a=1, b=4, timeout_s=10)).value == 5


def test_raise_is_crashed_and_worker_replaced(pool: WorkerPool) -> None:
    pid_before = pool.run(Job.of(fake_jobs.whoami, timeout_s=10)).value[0]
    r = pool.run(Job.of(fake_jobs.raise_runtime, timeout_s=10))
    assert r.status == "crashed"
    assert r.error_type == "RuntimeError"
    assert "illegal instruction" in r.reason and "\n" not in r.reason
    assert "Traceback" in r.detail
    after = pool.run(Job.of(fake_jobs.whoami, timeout_s=10))
    assert after.ok and after.value[0] != pid_before  # fresh process, fresh CUDA context


def test_reorder_error_is_error_and_worker_kept(pool: WorkerPool) -> None:
    pid_before = pool.run(Job.of(fake_jobs.whoami, timeout_s=10)).value[0]
    r = pool.run(Job.of(fake_jobs.raise_spec_error, "param 'x': bad", timeout_s=10))
    assert r.status == "error" and r.error_type == "SpecError" and "param 'x'" in r.reason
    assert pool.run(Job.of(fake_jobs.whoami, timeout_s=10)).value[0] == pid_before


def test_process_death_is_crashed(pool: WorkerPool) -> None:
    r = pool.run(Job.of(fake_jobs.die, 3, timeout_s=10))
    assert r.status == "crashed" and "exited with code 3" in r.reason
    assert pool.run(Job.of(fake_jobs.add, 1, 1, timeout_s=10)).value == 2


def test_hang_is_timeout(pool: WorkerPool) -> None:
    t0 = time.perf_counter()
    r = pool.run(Job.of(fake_jobs.hang, timeout_s=0.5))
    assert r.status == "timeout" and "0.5 s" in r.reason
    assert time.perf_counter() - t0 < 10
    assert pool.run(Job.of(fake_jobs.add, 2, 2, timeout_s=10)).value == 4


def test_unpicklable_result_is_reported(pool: WorkerPool) -> None:
    r = pool.run(Job.of(fake_jobs.unpicklable, timeout_s=10))
    assert r.status == "crashed" and "could not be sent back" in r.reason
    assert pool.run(Job.of(fake_jobs.add, 0, 0, timeout_s=10)).ok


def test_unknown_function_is_crashed(pool: WorkerPool) -> None:
    r = pool.run(Job("timing.fake_jobs:nope", timeout_s=10))
    assert r.status == "crashed" and r.error_type == "AttributeError"


def test_job_of_refuses_local_functions() -> None:
    def local() -> None:
        pass

    with pytest.raises(ValueError):
        Job.of(local)
    assert Job.of(fake_jobs.add, 1, 2).func == "timing.fake_jobs:add"
    assert resolve("timing.fake_jobs:add") is fake_jobs.add


def test_one_worker_per_device_in_parallel() -> None:
    with WorkerPool(devices=[3, 5], startup_timeout_s=30) as pool:
        assert pool.devices == (3, 5)
        warm = pool.map([Job.of(fake_jobs.whoami, timeout_s=10)] * 2)  # start both workers
        assert sorted(r.value[1] for r in warm) == ["3", "5"]
        assert {r.device for r in warm} == {3, 5}
        results = pool.map([Job.of(fake_jobs.sleep, 1.0, timeout_s=10)] * 2 + [Job.of(fake_jobs.die, timeout_s=10)])
        assert [r.status for r in results] == ["ok", "ok", "crashed"]
        (start_a, end_a), (start_b, end_b) = results[0].value, results[1].value
        assert max(start_a, start_b) < min(end_a, end_b), results  # the two sleeps overlapped in time
        after = pool.map([Job.of(fake_jobs.whoami, timeout_s=10)] * 2)
        assert all(r.ok for r in after)


def test_closed_pool_refuses() -> None:
    pool = WorkerPool(devices=[None])
    pool.close()
    with pytest.raises(RuntimeError):
        pool.run(Job.of(fake_jobs.add, 1, 1))


_MAIN_MODULE = """
from timing.worker import Job, WorkerPool


def twice(x):
    return 2 * x


if __name__ == "__main__":
    try:
        job = Job.of(twice, 21, timeout_s=30)
    except ValueError as exc:
        print("refused:", exc)
    else:
        with WorkerPool(devices=[None], startup_timeout_s=30) as pool:
            print(job.func, pool.run(job).value)
"""


def test_job_of_a_function_of_a_script_run_with_dash_m(tmp_path) -> None:
    """A benchmark script run as `python -m benchmarks.x` sends its own module-level jobs: the
    worker imports them as `benchmarks.x`, not `__main__` (reorder.suite.triton_gpu's first GPU
    run died on this); a plain script file has no importable name and is refused."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    (tmp_path / "mainjob.py").write_text(_MAIN_MODULE)
    root = str(Path(__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, str(tmp_path)])}
    as_module = subprocess.run(
        [sys.executable, "-m", "mainjob"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert as_module.stdout.strip() == "mainjob:twice 42", as_module.stderr
    as_file = subprocess.run(
        [sys.executable, "mainjob.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert as_file.stdout.startswith("refused:"), as_file.stderr


def test_a_script_without_a_main_guard_starts_a_worker(tmp_path) -> None:
    """multiprocessing's spawn re-runs the calling script in the child, which then starts a pool
    again and fails ("...bootstrapping phase"); the worker is a fresh interpreter instead."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    script = tmp_path / "no_guard.py"
    script.write_text(
        "from timing.worker import Job, WorkerPool\n"
        "with WorkerPool(devices=[None], startup_timeout_s=30) as pool:\n"
        "    print('result', pool.run(Job.of('timing.fake_jobs:add', 2, 5, timeout_s=10)).value)\n"
    )
    root = str(Path(__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    assert done.returncode == 0 and done.stdout.count("result 7") == 1, done.stderr[-500:]
