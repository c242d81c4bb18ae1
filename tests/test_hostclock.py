"""Events on the host clock, on a modelled GPU whose truth is known
(benchmarks/studies/clockmodel.py): every bound contains the truth, the host's half of the
handshake runs against a thread playing the GPU, and the timeline is written, read back and
drawn (one GPU and two)."""

from __future__ import annotations

import ctypes
import subprocess
import sys
import threading
from fractions import Fraction

import pytest
from conftest import ROOT

from benchmarks.studies.clockmodel import FakeGPU
from reorder.base.errors import GpuError
from reorder.cli.main import main
from reorder.probe import hostclock as hc
from reorder.probe.hostaxis import (
    HostAxis,
    Round,
    SyncWindow,
    cycle_lines,
    flag_check,
    host_axis,
    needed_slack,
    rate_check,
)
from reorder.probe.hosttimeline import EVENT_FIELDS, LAUNCH_FIELDS, host_timeline, load_run, read_table, write_outputs

SECOND = 10**9


def axis_of(gpu: FakeGPU, starts=(10 * SECOND, 10 * SECOND + 4 * 10**8), rounds=120, name="gpu0") -> HostAxis:
    return host_axis(name, [gpu.window(i, s, rounds) for i, s in enumerate(starts)])


def test_link1_unwraps_a_wrapping_clock_and_every_interval_holds_its_read():
    gpu = FakeGPU()
    base = gpu.ideal(10 * SECOND)
    gpu.sm_start[5] += (1 << 32) - 30_000 - gpu.cycles(5, base)  # the low word wraps 15 us in
    times = [base + 1700 * k + Fraction(k % 7, 3) for k in range(60)]
    points = [gpu.checkpoint(5, t) for t in times]
    (line,) = cycle_lines(points, gpu.tick)
    assert line.lines is not None and line.lines.bounded
    assert line.clocks[-1] > 1 << 32  # unwrapped past the wrap
    lo, hi = (a.tolist() for a in line.intervals())
    for k, t in enumerate(times):
        assert lo[k] <= line.interval(k)[0] <= t <= line.interval(k)[1] <= hi[k]
        assert hi[k] - lo[k] <= points[k].after + gpu.tick - points[k].before  # never wider than its window
    widths = sorted(b - a for a, b in zip(lo, hi))
    assert widths[len(widths) // 2] < 2 * gpu.tick  # the line narrows the windows (timer step 32 ns)
    between = base + 1700 * 30 + 850  # a cycle read that no timer read brackets
    span = line.at(gpu.cycles(5, between) % (1 << 32))
    assert span[0] <= between <= span[1]


def test_timer_reads_that_stray_from_one_line_get_the_least_slack_that_fits():
    """The H200's timer and cycle counter disagree with one line by a few ns; the slack the
    data need is found, it never exceeds the stray, and at the stray every bound holds."""
    gpu = FakeGPU(jitter=12)
    base = gpu.ideal(10 * SECOND)
    times = [base + 1700 * k + Fraction(k % 5, 2) for k in range(80)]
    points = [gpu.checkpoint(9, t) for t in times]
    assert cycle_lines(points, gpu.tick)[0].lines is None  # no line at all without slack
    need = needed_slack(points, gpu.tick)
    assert 0 < need <= gpu.jitter
    assert cycle_lines(points, gpu.tick, slack=need)[0].lines is not None
    (line,) = cycle_lines(points, gpu.tick, slack=gpu.jitter)
    assert all(line.interval(k)[0] <= t <= line.interval(k)[1] for k, t in enumerate(times))


def test_an_sm_clock_that_changes_rate_keeps_each_stamp_in_its_own_window():
    gpu = FakeGPU()
    base = gpu.ideal(10 * SECOND)
    points = []
    for k in range(40):
        t = base + 2000 * k
        if k == 20:
            gpu.sm_start[3] -= 5000  # the counter jumps: no single line fits
        points.append(gpu.checkpoint(3, t))
    (line,) = cycle_lines(points, gpu.tick)
    assert line.lines is None
    lo, hi = (a.tolist() for a in line.intervals())
    assert all(lo[k] <= base + 2000 * k <= hi[k] for k in range(40))


def test_link2_contains_the_truth_between_windows_and_widens_outside_them():
    gpu = FakeGPU()
    axis = axis_of(gpu)
    first, second = axis.syncs
    for g in range(first.start, second.end, (second.end - first.start) // 37):
        lo, hi = axis.interval(g, g)
        assert lo <= gpu.host_of(g) <= hi
    middle = (first.end + second.start) // 2
    assert axis.width(middle) <= max(axis.width(first.end), axis.width(second.start))
    later = second.end + 4 * 10**8
    assert axis.outside(later) and axis.width(later) > axis.width(middle)
    lo, hi = axis.interval(later, later)
    assert lo <= gpu.host_of(later) <= hi  # extrapolated, still hard under a constant rate


def test_rate_check_sees_a_rate_that_changed_between_windows():
    gpu = FakeGPU()
    windows = [gpu.window(0, 10 * SECOND, 100), gpu.window(1, 11 * SECOND, 100)]
    assert rate_check(windows) == 0
    gpu.offset += 5000  # the GPU clock steps 5 us before the third window
    windows.append(gpu.window(2, 12 * SECOND, 100))
    assert 0 < rate_check(windows) <= 5000
    late = SyncWindow(
        3,
        tuple(
            Round(r.host_down + 10**6, r.gpu_seen, r.gpu_down, r.gpu_up, r.host_up + 10**6) for r in windows[0].rounds
        ),
    )
    with pytest.raises(ValueError, match="no constant-rate line"):
        host_axis("gpu0", [windows[0], late])  # the same GPU ticks 1 ms later on the host: no line


def test_a_flag_the_host_saw_after_a_stamp_bounds_that_stamp():
    gpu = FakeGPU()
    axis = axis_of(gpu)
    middle = (axis.syncs[0].end + axis.syncs[1].start) // 2
    for k in range(5):
        test, released, flagged = gpu.flag_run(int(gpu.host_of(middle)) + 300_000 * k)
        check = flag_check(test, axis, gpu.tick)
        assert check.sound and check.ends_before_seen and check.starts_after_release
        assert check.flag[0] <= gpu.host_of(flagged) <= check.flag[1]
        assert check.release[0] <= gpu.host_of(released) <= check.release[1]


def test_the_hosts_half_of_the_handshake_against_a_thread_playing_the_gpu():
    """host_rounds and host_flag as they run on the GPU machine, over plain memory, with a
    thread that follows the kernels' protocol on the modelled timer."""
    gpu = FakeGPU(offset=1_764_000_000_000_000_000)
    words = (ctypes.c_uint64 * hc.MAILBOX_WORDS)()
    kept: list[tuple[int, int, int]] = []

    def timer() -> int:
        return gpu.timer(gpu.ideal(hc.host_ns()))

    def device(rounds: int) -> None:
        words[hc.STATE] = hc.RUNNING
        for n in range(1, rounds + 1):
            while words[hc.RELEASED] != n:
                pass
            g1 = timer()
            while (g2 := timer()) == g1:
                pass
            while (g3 := timer()) == g2:
                pass
            words[hc.PUBLISHED] = g3
            kept.append((g1, g2, g3))
        words[hc.STATE] = hc.DONE

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        thread = threading.Thread(target=device, args=(25,))
        thread.start()
        host = hc.host_rounds(words, 25, timeout_s=20)
        thread.join()
    finally:
        sys.setswitchinterval(old)
    window = SyncWindow(0, tuple(Round(h[0], g[0], g[1], g[2], h[2]) for g, h in zip(kept, host)))
    assert [h[1] for h in host] == [g[2] for g in kept]
    axis = host_axis("gpu0", [window])
    for r in window.rounds:
        lo, hi = axis.interval(r.gpu_up, r.gpu_up)
        assert lo <= gpu.host_of(r.gpu_up) <= hi <= r.host_up
    words[hc.STATE] = 0
    with pytest.raises(GpuError, match="did not start"):
        hc.host_rounds(words, 1, timeout_s=0.01)


def test_the_handshake_kernels_assemble():
    from reorder.binary.tools import have_tool, run_tool

    if not have_tool("ptxas"):
        pytest.skip("no ptxas")
    for arch in (80, 90):
        for name, body in (("h", hc.HANDSHAKE_PTX), ("f", hc.FLAG_PTX)):
            out = run_tool(
                "ptxas", f"-arch=sm_{arch}", "-", "-o", "/dev/null", input_bytes=hc.ptx_for(body, arch).encode()
            )
            assert "error" not in out.lower(), (arch, name, out)


# ---------------------------------------------------------------- the timeline, end to end


def stamp_rows_of(gpu: FakeGPU, launch: int, host_call: int, blocks: int, warps: int, stamps: int):
    """What reorder.probe.run.stamp_rows gives for a modelled launch: per warp and stamp, a
    checkpoint on the warp's SM; the truth of each read kept beside it."""
    rows, truth = [], {}
    entry = gpu.ideal(host_call + 6000)
    for b in range(blocks):
        for w in range(warps):
            warp = b * warps + w
            t = entry + 150 * b + 40 * w
            for n in range(stamps):
                t += 3000 + 200 * ((b + n) % 5)
                cp = gpu.checkpoint(b % 4, t)
                truth[(launch, warp, n)] = t
                row = {"warp": warp, "block": b, "stamp": n, "offset": f"{0x10 * (n + 1):#06x}", "instruction": "NOP"}
                row.update(clock=cp.clock, sm=cp.sm, globaltimer_ns=cp.before, globaltimer_after_ns=cp.after)
                rows.append({**row, "launch": launch})
    return rows, truth, entry


def modelled_run(name: str, gpu: FakeGPU):
    start = 10 * SECOND
    before = gpu.window(0, start, 100)
    calls, rows, truth, entries = [], [], {}, []
    for k in range(3):
        call = before.rounds[-1].host_up + 10**6 * (k + 1)
        got, t, entry = stamp_rows_of(gpu, k, call, blocks=6, warps=2, stamps=3)
        rows += got
        truth.update(t)
        entries.append(entry)
        calls.append(hc.LaunchCall(k, call, call + 4000))
    after = gpu.window(1, calls[-1].host_call + 10**7, 100)
    return host_timeline(name, "modelled", rows, 2, [before, after], calls), truth, entries


def test_timeline_events_and_latency_contain_the_truth(tmp_path):
    gpu = FakeGPU()
    timeline, truth, _ = modelled_run("gpu0", gpu)
    assert len(timeline.events) == 3 * 6 * 3  # warp 0 of 6 blocks, 3 stamps, 3 launches
    for e in timeline.events:
        t = truth[(e["launch"], e["warp"], e["stamp"])]
        assert e["gpu_lo_ns"] <= t <= e["gpu_hi_ns"]
        assert e["host_lo_ns"] <= gpu.host_of(t) <= e["host_hi_ns"]
    for row in timeline.launches:
        first = gpu.host_of(min(t for (launch, _, n), t in truth.items() if launch == row.launch and n == 0))
        assert row.entry_lo <= first <= row.entry_hi
        assert 0 < row.latency[0] <= 6000 + 3000 <= row.latency[1] + 3000
        assert 0 < row.proven <= row.pairs == 18 * 17 // 2
    paths = write_outputs(timeline, tmp_path / "events.csv")
    assert len(read_table(paths["events"], EVENT_FIELDS, "events")) == len(timeline.events)
    assert len(read_table(paths["launches"], LAUNCH_FIELDS, "launches")) == 3
    assert paths["summary"].read_text().count('"kind": "hard"') >= 6
    gpu_name, kernel, rows, syncs, calls = load_run(paths["events"])  # read back, analysed again
    again = host_timeline(gpu_name, kernel, rows, 2, syncs, calls)
    assert len(again.events) == len(timeline.events)
    for e in again.events:
        assert e["host_lo_ns"] <= gpu.host_of(truth[(e["launch"], e["warp"], e["stamp"])]) <= e["host_hi_ns"]


def test_host_timeline_draws_two_gpus_on_one_axis(tmp_path, capsys):
    csvs = []
    for i, offset in enumerate((1_764_000_000_000_000_000, 1_764_000_000_123_000_000)):
        timeline, _, _ = modelled_run(f"0000:{i:02x}:00.0", FakeGPU(offset=offset))
        csvs.append(str(write_outputs(timeline, tmp_path / f"gpu{i}.csv")["events"]))
    png = tmp_path / "both.png"
    assert main(["host-timeline", *csvs, "-o", str(png)]) == 0
    assert "of 630 pairs in a proven order" in capsys.readouterr().out  # 36 events: 18 per GPU
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert main(["host-timeline", str(tmp_path / "gpu0.launches.csv")]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_host_clock_needs_region_stamps(tmp_path):
    spec = ROOT / "benchmarks/kernels/specs/rms_norm_f32.toml"
    cubin = ROOT / "benchmarks/kernels/cubin/rmsnorm.cubin"
    done = subprocess.run(
        [sys.executable, "-m", "reorder", "probe", str(cubin), "--launch", str(spec), "--host-clock"],
        check=False,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and "--stamps" in done.stderr and len(done.stderr.strip().splitlines()) == 1


def modelled_job(gpu: FakeGPU, warps: int, stamps: int, launches: int, sms: int = 132):
    """What stamps_job returns, on the model: records (launches, warps, 6 words per stamp)."""
    import numpy as np

    syncs, calls, records = [gpu.window(0, 10 * SECOND, 80)], [], []
    for k in range(launches):
        call = syncs[0].rounds[-1].host_up + 10**6 * (k + 1)
        calls.append(hc.LaunchCall(k, call, call + 3500))
        words = np.zeros((warps, 6 * stamps), dtype=np.uint32)
        for w in range(warps):
            sm, t = (w // 8) % sms, gpu.ideal(call + 7000) + 90 * (w % 16)
            for n in range(stamps):
                t += 2500
                cp = gpu.checkpoint(sm, t)
                words[w, 6 * n : 6 * n + 6] = [cp.before & 0xFFFFFFFF, cp.before >> 32, cp.clock, sm] + [
                    cp.after & 0xFFFFFFFF,
                    cp.after >> 32,
                ]
        records.append(words)
    syncs.append(gpu.window(1, calls[-1].host_call + 10**7, 80))
    return {"gpu": "0000:1b:00.0", "syncs": syncs, "calls": calls, "records": np.stack(records)}


def test_probe_host_clock_writes_every_file_from_a_modelled_run(tmp_path, monkeypatch, capsys):
    """The command's whole CPU side (stamp build and check, record decoding, both links, the
    files and the PNG) with the GPU job answered by the model."""
    import tomllib

    from reorder.suite.sweep import apply_sweep, spec_toml
    from timing import cli_support
    from timing.worker import JobResult

    raw = dict(
        apply_sweep(
            tomllib.loads((ROOT / "benchmarks/kernels/specs/rmsnorm_triton_style.toml").read_text()), {"rows": 32}
        )
    )
    raw.pop("grid_sweep", None)
    spec = tmp_path / "rms32.toml"
    spec.write_text(spec_toml(raw))
    cubin = ROOT / "benchmarks/kernels/cubin/rmsnorm.cubin"
    jobs = []

    def answer(job):
        jobs.append(job)
        return JobResult("ok", modelled_job(FakeGPU(), warps=32 * 8, stamps=3, launches=job.args[2]))

    monkeypatch.setattr(cli_support, "require_gpu", lambda *a, **k: None)
    monkeypatch.setattr(cli_support, "run_one", answer)
    out = tmp_path / "events.csv"
    argv = ["probe", str(cubin), "--launch", str(spec), "--stamps", "bb0,1080", "--host-clock", "--launches", "2"]
    assert main([*argv, "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert jobs[0].func == "reorder.probe.hostclock:stamps_job"
    assert "launch call -> first warp entry" in printed and "link 1" in printed and "link 2" in printed
    events = read_table(out, EVENT_FIELDS, "events")
    assert len(events) == 2 * 32 * 3  # the entry stamp is added to bb0 and 1080
    assert {e["offset"] for e in events} == {"0x0000", "0x0bb0", "0x1080"}
    assert all(e["gpu_bound"] == "line" for e in events)
    for name in ("events.launches.csv", "events.sync.csv", "events.json"):
        assert (tmp_path / name).stat().st_size > 0
    assert (tmp_path / "events.png").read_bytes()[:4] == b"\x89PNG"
