"""The device side of the host clock: one GPU thread and the host shake hands through mapped
(zero-copy) pinned memory, so the GPU's timer can be put on the host's clock.

A sync window is one launch of a one-thread kernel that runs `rounds` handshakes with the
host (reorder.probe.hostaxis says what each proves). Round n: the host reads its clock and
writes n to the mailbox; the GPU, polling, sees n, reads the timer and spins to its next
tick (it saw n before that tick); then it spins to a fresh tick and writes that tick's
value to the mailbox at once; the host, polling, sees it and reads its clock. The GPU keeps
its three timer values per round in device memory, read back after the window.

The flag test is the check that a bound contains what the host saw: a one-thread kernel
takes timer/clock/timer checkpoints, waits for the host's release and reads its cycle
counter, takes more checkpoints, reads the counter and sets a flag in the mailbox, and
takes more. The host knows when it released the kernel and when it saw the flag; the
cycle reads' host intervals must agree with both.

The kernels are PTX, compiled by the driver for the GPU at hand (no compiler needed where
they run); every wait on the other side gives up after `patience_ns`, and the host's
waits after a deadline, so nothing hangs. Host time is CLOCK_MONOTONIC_RAW: one clock for
every process of the host (one process per GPU puts N GPUs on one axis) and never slewed.
"""

from __future__ import annotations

import ctypes
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reorder.base.errors import GpuError
from reorder.probe.hostaxis import Checkpoint, FlagTest, Round, SyncWindow

RELEASED, PUBLISHED, STATE = 0, 1, 2  # mailbox words: host -> GPU, GPU -> host, kernel state
RUNNING, DONE, GAVE_UP = 1, 2, 3
MAILBOX_WORDS = 8
HOST_ALLOC_PORTABLE, HOST_ALLOC_MAPPED = 1, 2  # cudaHostAlloc flags (cuda_runtime_api.h)
HOST_CLOCK = time.CLOCK_MONOTONIC_RAW
DEFAULT_ROUNDS = 400
PATIENCE_NS = 2_000_000_000
CHECK_EVERY = 1024  # host spins between deadline checks


def host_ns() -> int:
    """The host clock every host time of this module is read from."""
    return time.clock_gettime_ns(HOST_CLOCK)


_HEAD = """.version {version}
.target sm_{arch}
.address_size 64
"""


def ptx_for(body: str, arch: int) -> str:
    """A kernel's PTX for one arch, at the oldest PTX version that names that target."""
    return _HEAD.format(arch=arch, version="8.0" if arch <= 90 else "8.8") + body


# box: mapped host words (RELEASED, PUBLISHED, STATE); out: per round {seen, next tick, fresh tick}
HANDSHAKE_PTX = """
.visible .entry reorder_handshake(.param .u64 box, .param .u64 out, .param .u32 rounds, .param .u64 patience)
{
  .reg .pred %p<4>;
  .reg .b32 %r<4>;
  .reg .b64 %rd<16>;
  ld.param.u64 %rd1, [box];
  ld.param.u64 %rd2, [out];
  ld.param.u32 %r1, [rounds];
  ld.param.u64 %rd3, [patience];
  mov.u64 %rd4, 1;
  st.volatile.global.u64 [%rd1+16], %rd4;
  membar.sys;
  mov.u32 %r2, 0;
ROUND:
  setp.ge.u32 %p1, %r2, %r1;
  @%p1 bra DONE;
  add.u32 %r2, %r2, 1;
  cvt.u64.u32 %rd5, %r2;
  mov.u64 %rd6, %globaltimer;
WAIT:
  ld.volatile.global.u64 %rd7, [%rd1];
  setp.eq.u64 %p2, %rd7, %rd5;
  @%p2 bra SEEN;
  mov.u64 %rd8, %globaltimer;
  sub.u64 %rd8, %rd8, %rd6;
  setp.gt.u64 %p3, %rd8, %rd3;
  @%p3 bra GAVE_UP;
  bra.uni WAIT;
SEEN:
  mov.u64 %rd9, %globaltimer;
NEXT:
  mov.u64 %rd10, %globaltimer;
  setp.eq.u64 %p2, %rd10, %rd9;
  @%p2 bra NEXT;
FRESH:
  mov.u64 %rd11, %globaltimer;
  setp.eq.u64 %p2, %rd11, %rd10;
  @%p2 bra FRESH;
  st.volatile.global.u64 [%rd1+8], %rd11;
  membar.sys;
  sub.u32 %r3, %r2, 1;
  mul.wide.u32 %rd12, %r3, 24;
  add.u64 %rd13, %rd2, %rd12;
  st.global.u64 [%rd13], %rd9;
  st.global.u64 [%rd13+8], %rd10;
  st.global.u64 [%rd13+16], %rd11;
  bra.uni ROUND;
GAVE_UP:
  mov.u64 %rd4, 3;
  st.volatile.global.u64 [%rd1+16], %rd4;
  membar.sys;
  ret;
DONE:
  mov.u64 %rd4, 2;
  st.volatile.global.u64 [%rd1+16], %rd4;
  membar.sys;
  ret;
}
"""

# out: [0] SM id, [1] clock after the release was seen, [2] clock before the flag, then
# 3 groups x `count` checkpoints {timer, clock, timer}, `spacing` ns apart
FLAG_PTX = """
.visible .entry reorder_flag_test(.param .u64 box, .param .u64 out, .param .u32 count, .param .u64 spacing,
                                  .param .u64 token, .param .u64 patience)
{
  .reg .pred %p<4>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<24>;
  ld.param.u64 %rd1, [box];
  ld.param.u64 %rd2, [out];
  ld.param.u32 %r1, [count];
  ld.param.u64 %rd3, [spacing];
  ld.param.u64 %rd4, [token];
  ld.param.u64 %rd5, [patience];
  mov.u32 %r2, %smid;
  cvt.u64.u32 %rd6, %r2;
  st.global.u64 [%rd2], %rd6;
  add.u64 %rd7, %rd2, 24;
  mov.u64 %rd6, 1;
  st.volatile.global.u64 [%rd1+16], %rd6;
  membar.sys;
  mov.u32 %r3, 0;
GROUP:
  mov.u32 %r4, 0;
POINT:
  mov.u64 %rd8, %globaltimer;
  mov.u64 %rd9, %clock64;
  mov.u64 %rd10, %globaltimer;
  st.global.u64 [%rd7], %rd8;
  st.global.u64 [%rd7+8], %rd9;
  st.global.u64 [%rd7+16], %rd10;
  add.u64 %rd7, %rd7, 24;
SPACE:
  mov.u64 %rd11, %globaltimer;
  sub.u64 %rd11, %rd11, %rd10;
  setp.lt.u64 %p1, %rd11, %rd3;
  @%p1 bra SPACE;
  add.u32 %r4, %r4, 1;
  setp.lt.u32 %p1, %r4, %r1;
  @%p1 bra POINT;
  add.u32 %r3, %r3, 1;
  setp.eq.u32 %p1, %r3, 1;
  @%p1 bra RELEASE;
  setp.eq.u32 %p1, %r3, 2;
  @%p1 bra FLAG;
  mov.u64 %rd6, 2;
  st.volatile.global.u64 [%rd1+16], %rd6;
  membar.sys;
  ret;
RELEASE:
  mov.u64 %rd12, %globaltimer;
WAIT:
  ld.volatile.global.u64 %rd13, [%rd1];
  setp.eq.u64 %p2, %rd13, %rd4;
  @%p2 bra SEEN;
  mov.u64 %rd14, %globaltimer;
  sub.u64 %rd14, %rd14, %rd12;
  setp.gt.u64 %p3, %rd14, %rd5;
  @%p3 bra GAVE_UP;
  bra.uni WAIT;
SEEN:
  mov.u64 %rd15, %clock64;
  st.global.u64 [%rd2+8], %rd15;
  bra.uni GROUP;
FLAG:
  mov.u64 %rd16, %clock64;
  st.volatile.global.u64 [%rd1+8], %rd16;
  membar.sys;
  st.global.u64 [%rd2+16], %rd16;
  bra.uni GROUP;
GAVE_UP:
  mov.u64 %rd6, 3;
  st.volatile.global.u64 [%rd1+16], %rd6;
  membar.sys;
  ret;
}
"""


# ---------------------------------------------------------------- the host's half (no CUDA here)


Words = Any  # a ctypes c_uint64 array over the mailbox (mapped host memory, or plain memory in tests)


def wait_for(words: Words, index: int, unlike: int, deadline_ns: int, what: str) -> int:
    """Spin until words[index] != unlike; its new value. GpuError past the deadline."""
    spins = 0
    while (value := words[index]) == unlike:
        spins += 1
        if spins % CHECK_EVERY == 0 and host_ns() > deadline_ns:
            raise GpuError(f"host clock sync: the GPU did not {what} in time (mailbox word {index} stayed {unlike})")
    return value


def host_rounds(words: Words, rounds: int, timeout_s: float) -> list[tuple[int, int, int]]:
    """The host's half of a sync window: (host_down, published tick, host_up) per round.

    Waits for the kernel to say it runs; then, per round, reads the clock, releases the
    round, spins until a new tick is published and reads the clock again. Nothing but the
    mailbox and the clock is touched between the two reads.
    """
    patience = int(timeout_s * 1e9)
    wait_for(words, STATE, 0, host_ns() + patience, "start")
    out = []
    last = words[PUBLISHED]
    for n in range(1, rounds + 1):
        down = host_ns()
        words[RELEASED] = n
        last = wait_for(words, PUBLISHED, last, down + patience, f"answer round {n}")
        out.append((down, last, host_ns()))
    return out


def host_flag(words: Words, token: int, lead_ns: int, timeout_s: float) -> tuple[int, int]:
    """The host's half of a flag test: (release time, time the flag was seen)."""
    deadline = host_ns() + int(timeout_s * 1e9)
    wait_for(words, STATE, 0, deadline, "start")
    until = host_ns() + lead_ns
    while host_ns() < until:  # let the kernel take its first checkpoints and start waiting
        pass
    go = host_ns()
    words[RELEASED] = token
    wait_for(words, PUBLISHED, 0, deadline, "set the flag")
    return go, host_ns()


# ---------------------------------------------------------------- the device


class Mailbox:
    """Mapped, pinned host words the GPU reads and writes over the bus (zero-copy)."""

    def __init__(self, cp: Any, words: int = MAILBOX_WORDS) -> None:
        flags = HOST_ALLOC_PORTABLE | HOST_ALLOC_MAPPED
        self._cp = cp
        self.host_ptr = cp.cuda.runtime.hostAlloc(8 * words, flags)
        self.words = (ctypes.c_uint64 * words).from_address(self.host_ptr)
        self.device_ptr = _device_pointer(cp, self.host_ptr)

    def clear(self) -> None:
        for i in range(len(self.words)):
            self.words[i] = 0

    def close(self) -> None:
        if self.host_ptr:
            self._cp.cuda.runtime.freeHost(self.host_ptr)
            self.host_ptr = 0


def _device_pointer(cp: Any, host_ptr: int) -> int:
    """The device address of mapped host memory (the same address under unified addressing)."""
    try:
        return int(cp.cuda.runtime.pointerGetAttributes(host_ptr).devicePointer)
    except Exception:  # noqa: BLE001 - older cupy has no pointer attributes; unified addressing maps 1:1
        return host_ptr


class Session:
    """One GPU's mailbox and handshake kernels, in the process that owns its context."""

    def __init__(self, patience_ns: int = PATIENCE_NS) -> None:
        from timing.gpu import cupy_module

        self.cp = cp = cupy_module()
        self.arch = int(cp.cuda.Device().compute_capability)  # "90"
        self.gpu = str(cp.cuda.Device().pci_bus_id)
        self.patience_ns = patience_ns
        self.box = Mailbox(cp)
        self._folder = tempfile.TemporaryDirectory(prefix="reorder-hostclock-")
        self.handshake = self._load(HANDSHAKE_PTX, "reorder_handshake")
        self.flag = self._load(FLAG_PTX, "reorder_flag_test")

    def _load(self, ptx: str, name: str) -> Any:
        path = Path(self._folder.name) / f"{name}.ptx"
        path.write_text(ptx_for(ptx, self.arch))
        try:
            return self.cp.RawModule(path=str(path)).get_function(name)
        except Exception as e:  # noqa: BLE001 - cupy's CUDA errors have no common base to name
            raise GpuError(f"host clock sync: the driver did not load {name}: {e}") from None

    def close(self) -> None:
        self.box.close()
        self._folder.cleanup()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def sync_window(self, index: int, rounds: int = DEFAULT_ROUNDS) -> SyncWindow:
        """One launch of the handshake kernel: `rounds` rounds, checked against each other."""
        import numpy as np

        cp = self.cp
        self.box.clear()
        out = cp.zeros(3 * rounds, dtype=cp.uint64)
        args = (np.uint64(self.box.device_ptr), out, np.uint32(rounds), np.uint64(self.patience_ns))
        self.handshake((1,), (1,), args)
        host = host_rounds(self.box.words, rounds, self.patience_ns / 1e9 + 5)
        cp.cuda.Device().synchronize()
        self._finished("handshake")
        gpu = out.get().reshape(rounds, 3).tolist()
        if any(g[2] != h[1] for g, h in zip(gpu, host)):
            raise GpuError("host clock sync: a published tick differs from the one the kernel kept")
        return SyncWindow(index, tuple(Round(h[0], g[0], g[1], g[2], h[2]) for g, h in zip(gpu, host)))

    def flag_test(self, count: int = 32, spacing_ns: int = 2000, lead_ns: int = 200_000) -> FlagTest:
        """One flag-test launch (see the module docstring)."""
        import numpy as np

        cp = self.cp
        self.box.clear()
        token = 0x5EED
        out = cp.zeros(3 + 9 * count, dtype=cp.uint64)
        args = (
            np.uint64(self.box.device_ptr),
            out,
            np.uint32(count),
            np.uint64(spacing_ns),
            np.uint64(token),
            np.uint64(self.patience_ns),
        )
        self.flag((1,), (1,), args)
        go, seen = host_flag(self.box.words, token, lead_ns, self.patience_ns / 1e9 + 5)
        cp.cuda.Device().synchronize()
        self._finished("flag test")
        words = out.get().tolist()
        sm = int(words[0])
        points = tuple(Checkpoint(sm, c, b, a) for b, c, a in zip(*[iter(words[3:])] * 3))
        return FlagTest(go, seen, sm, int(words[1]), int(words[2]), points)

    def _finished(self, what: str) -> None:
        if self.box.words[STATE] != DONE:
            raise GpuError(f"host clock sync: the {what} kernel gave up waiting for the host")


@dataclass(frozen=True)
class LaunchCall:
    """Host clock just before a launch call and just after it returned (exact)."""

    launch: int
    host_call: int
    host_return: int


def timed_launches(
    session: Session,
    launch: Callable[[], None],
    reset: Callable[[], None],
    collect: Callable[[], Any],
    launches: int,
    rounds: int = DEFAULT_ROUNDS,
    sync_every_s: float = 1.0,
) -> tuple[list[SyncWindow], list[LaunchCall], list[Any]]:
    """Sync, then `launches` launches from an idle GPU (each: reset, wait, read the clock,
    launch, read the clock, wait, collect), a sync window whenever `sync_every_s` has
    passed since the last and one at the end."""
    cp = session.cp
    syncs = [session.sync_window(0, rounds)]
    last = host_ns()
    calls, records = [], []
    for k in range(launches):
        reset()
        cp.cuda.Device().synchronize()
        before = host_ns()
        launch()
        after = host_ns()
        cp.cuda.Device().synchronize()
        calls.append(LaunchCall(k, before, after))
        records.append(collect())
        if host_ns() - last > sync_every_s * 1e9 and k + 1 < launches:
            syncs.append(session.sync_window(len(syncs), rounds))
            last = host_ns()
    syncs.append(session.sync_window(len(syncs), rounds))
    return syncs, calls, records


def stamps_job(cubin: str, spec: Any, launches: int, rounds: int = DEFAULT_ROUNDS) -> dict[str, Any]:
    """Worker job: a region-stamp build launched `launches` times between sync windows.

    One warm-up launch first (module loading stays out of the first launch's latency).
    Returns the GPU's bus id, the sync windows, the launch calls, and the records of each
    launch (launches, warps, words)."""
    import numpy as np

    from reorder.probe.run import RECORDS_PARAM, layout_of
    from timing import gpu
    from timing.inputs import draw_inputs

    with Session() as session:
        kernel = gpu.load_kernel(cubin, spec)
        dev = gpu.to_device(draw_inputs(spec, 0), spec)
        args = gpu.launch_args(spec, dev)
        records = dev[RECORDS_PARAM]
        gpu.launch(kernel, spec, args)
        gpu.synchronize()
        syncs, calls, got = timed_launches(
            session,
            launch=lambda: gpu.launch(kernel, spec, args),
            reset=lambda: records.fill(0xFFFFFFFF),
            collect=records.get,
            launches=launches,
            rounds=rounds,
        )
        warps = layout_of(spec).warps
        return {
            "gpu": session.gpu,
            "syncs": syncs,
            "calls": calls,
            "records": np.stack(got).reshape(launches, warps, -1),
        }


def flag_tests(session: Session, count: int) -> list[FlagTest]:
    return [session.flag_test() for _ in range(count)]


def windows_span(syncs: Sequence[SyncWindow]) -> int:
    """GPU ns from the first window's start to the last one's end."""
    return syncs[-1].end - syncs[0].start
