"""The README's promises under hostile or clumsy use. Bad input is one line and
exit 2, outputs never replace what they should not, verdicts survive pipes, and a killed
run leaves no process or temp file behind. One test per item of the issue; each failed
before its fix."""

from __future__ import annotations

import os
import re
import resource
import signal
import stat
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reorder.binary.cubin import read_cubin
from reorder.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
CUBIN = ROOT / "benchmarks" / "kernels" / "cubin" / "rmsnorm.cubin"
SMALL = ROOT / "benchmarks" / "kernels" / "cubin" / "gather_histogram.cubin"
SPEC = ROOT / "benchmarks" / "kernels" / "specs" / "rmsnorm_triton_style.toml"


def _cpu_seconds() -> float:
    """CPU time of this process and its finished children: what a refusal costs, whatever
    else the machine is doing (a wall-clock bound fails on a busy machine)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _run(capsys, *args: str) -> tuple[int, str, str]:
    """`reorder ARGS` in this process: (exit code, stdout, stderr)."""
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _one_line_refusal(code: int, err: str, command: str) -> str:
    assert code == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"reorder {command}: error: "), err
    return lines[0]


def _mutant(tmp_path: Path, name: str, patch) -> Path:
    data = bytearray(CUBIN.read_bytes())
    patch(data, read_cubin(CUBIN))
    path = tmp_path / f"{name}.cubin"
    path.write_bytes(data)
    return path


# ---------------------------------------------------------------- 1. outputs aimed at devices, FIFOs; modes


def test_1_output_on_a_device_or_fifo_is_refused_and_left_alone(tmp_path: Path, capsys) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    targets = [(fifo, "FIFO", stat.S_ISFIFO)]
    device = tmp_path / "null"  # a copy of /dev/null's node: the test must not risk the real one
    try:
        os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        targets.append((device, "character device", stat.S_ISCHR))
    except (PermissionError, AttributeError):
        pass  # not root: the FIFO stands for every node
    for target, says, still in targets:
        before = os.stat(target)
        line = _one_line_refusal(*_run(capsys, "stalls", str(SMALL), "-o", str(target))[::2], "stalls")
        assert says in line
        after = os.stat(target)
        assert still(after.st_mode) and after.st_ino == before.st_ino


def test_1_outputs_keep_the_replaced_mode_and_follow_the_umask(tmp_path: Path, capsys) -> None:
    from reorder.base.files import write_atomic

    old = os.umask(0o027)
    try:
        fresh = write_atomic(tmp_path / "fresh.bin", b"x")
    finally:
        os.umask(old)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o640  # mkstemp alone gives 0600
    kept = tmp_path / "kept.bin"
    kept.write_bytes(b"old")
    kept.chmod(0o664)
    write_atomic(kept, b"new")
    assert stat.S_IMODE(kept.stat().st_mode) == 0o664 and kept.read_bytes() == b"new"


# ---------------------------------------------------------------- 2. corrupt section tables


def _shnum(value: int):
    return lambda data, cubin: struct.pack_into("<H", data, 0x3C, value)


def _shstrtab_offset(data: bytearray, cubin) -> None:
    names = cubin.section(".shstrtab")
    struct.pack_into("<Q", data, names.header_offset + 24, 0x100)  # sh_offset: into .strtab's bytes


@pytest.mark.parametrize("patch", [_shnum(0), _shnum(3), _shstrtab_offset], ids=["shnum0", "shnum3", "shstrtab"])
def test_2_no_readable_kernel_is_bad_input(tmp_path: Path, capsys, patch) -> None:
    path = _mutant(tmp_path, "sections", patch)
    for command in ("disasm", "verify"):
        code, out, err = _run(capsys, command, str(path))
        _one_line_refusal(code, err, command)
        assert out == ""


# ---------------------------------------------------------------- 3. absurd header values


def _regcount(data: bytearray, cubin) -> None:
    from reorder.binary.nvinfo import ATTR_REGCOUNT

    section = cubin.sections[cubin.global_info_section]
    record = next(r for r in cubin.global_attrs if r.attr == ATTR_REGCOUNT)
    struct.pack_into("<I", data, section.offset + record.offset + 8, 60437)


def _shared(data: bytearray, cubin) -> None:
    shared = cubin.section(".nv.shared.rmsnorm_triton_style")
    struct.pack_into("<Q", data, shared.header_offset + 32, 4 * 2**30)  # sh_size


@pytest.mark.parametrize(
    ("patch", "says"), [(_regcount, "register count 60437"), (_shared, "shared memory")], ids=["regcount", "shared"]
)
def test_3_header_values_beyond_the_arch_are_refused(tmp_path: Path, capsys, patch, says) -> None:
    path = _mutant(tmp_path, "absurd", patch)
    assert says in _one_line_refusal(*_run(capsys, "verify", str(path))[::2], "verify")
    out = tmp_path / "out.cubin"
    _one_line_refusal(*_run(capsys, "stalls", str(path), "-o", str(out))[::2], "stalls")
    assert not out.exists()


# ---------------------------------------------------------------- 4. inputs that make nvdisasm spin


def _debug_frame_addend(data: bytearray, cubin) -> None:
    rela = cubin.section(".rela.debug_frame")
    struct.pack_into("<q", data, rela.offset + 3 * 24 + 16, 0x30000000)  # a mutant that spun for 11+ minutes


def test_4_a_relocation_past_its_function_is_named_not_disassembled(tmp_path: Path, capsys) -> None:
    path = _mutant(tmp_path, "spin", _debug_frame_addend)
    start = _cpu_seconds()
    line = _one_line_refusal(*_run(capsys, "disasm", str(path))[::2], "disasm")
    assert "corrupt .rela.debug_frame: relocation 3" in line and _cpu_seconds() - start < 10


def test_4_nvdisasm_time_is_bounded_by_the_input_size(tmp_path: Path, monkeypatch) -> None:
    from reorder.base.errors import InputError
    from reorder.binary import tools
    from reorder.sass import model as sass

    assert sass.nvdisasm_timeout(14 * 1024) < 20 and sass.nvdisasm_timeout(2**20) <= 30
    slow = tmp_path / "nvdisasm"
    slow.write_text(
        "#!/bin/sh\n[ \"$1\" = --version ] && echo 'Cuda compilation tools, release 13.5, V13.5.37' "
        "&& exit 0\nsleep 30\n"
    )
    slow.chmod(0o755)
    monkeypatch.setenv("REORDER_NVDISASM", str(slow))
    monkeypatch.setattr(sass, "NVDISASM_BASE_S", 1.0)
    tools.find_tool.cache_clear()
    try:
        start = time.monotonic()
        with pytest.raises(InputError, match="did not finish within 1 s"):
            sass.nvdisasm_json(b"\0" * 64, ".cubin")
        assert time.monotonic() - start < 10
    finally:
        tools.find_tool.cache_clear()


# ---------------------------------------------------------------- 5. launch specs


def _spec(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "spec.toml"
    path.write_text('[kernel]\nname = "k"\ngrid = [1]\nblock = [32]\n\n' + body)
    return path


def _buffer(shape: str = "[16]", dtype: str = "float32", init: str = '{ dist = "normal" }') -> str:
    return f'[[param]]\nname = "x"\nkind = "buffer"\ndtype = "{dtype}"\nshape = {shape}\nrole = "in"\ninit = {init}\n'


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ("deep = " + "[" * 3000 + "]" * 3000 + "\n", "nested too deeply"),
        (_buffer("[1000000, 1000000]"), "at most 16 GiB"),
        (_buffer("[4611686018427387904, 4]"), "at most 16 GiB"),
        (_buffer(init='{ dist = "uniform", low = -inf, high = inf }'), "must be finite"),
        (_buffer(init='{ dist = "uniform", low = -1e308, high = 1e308 }'), "wider than a float64"),
        (_buffer(init='{ dist = "normal", std = nan }'), "must be finite"),
        (_buffer(dtype="float32", init='{ dist = "integers", high = 99999999999999999999 }'), "does not fit int64"),
        ('[[param]]\nname = "n"\nkind = "scalar"\ndtype = "int32"\nvalue = 1e400\n', "does not fit int32"),
    ],
    ids=[
        "nested",
        "1e12",
        "int64-overflow",
        "uniform-inf",
        "uniform-range",
        "normal-nan",
        "integers-int64",
        "scalar-inf",
    ],
)
def test_5_specs_whose_inputs_cannot_be_drawn_are_refused(tmp_path: Path, body: str, says: str) -> None:
    from reorder.base.errors import SpecError
    from timing.spec import load_spec

    with pytest.raises(SpecError, match=says):
        load_spec(_spec(tmp_path, body))


def test_5_hook_must_import_up_front(tmp_path: Path, capsys) -> None:
    spec = tmp_path / "hook.toml"
    spec.write_text(SPEC.read_text().replace("[kernel]\n", '[kernel]\nhook = "no_such_module_q:make"\n', 1))
    line = _one_line_refusal(*_run(capsys, "check", str(CUBIN), str(CUBIN), "--launch", str(spec))[::2], "check")
    assert "no_such_module_q" in line and "cannot be imported" in line


def test_5_nested_spec_is_one_line_in_check(tmp_path: Path, capsys) -> None:
    spec = _spec(tmp_path, "deep = " + "[" * 5000 + "]" * 5000 + "\n")
    assert "nested too deeply" in _one_line_refusal(
        *_run(capsys, "check", str(CUBIN), str(CUBIN), "--launch", str(spec))[::2], "check"
    )


# ---------------------------------------------------------------- 6. verdicts through a closed pipe


def test_6_verdict_survives_a_closed_pipe(tmp_path: Path) -> None:
    from legality.mutate import scoreboard_mutants
    from reorder.sass.model import decode_kernel
    from reorder.sass.writer import patch_kernel

    cubin = read_cubin(CUBIN)
    kernel = cubin.kernels[0]
    mutant = next(scoreboard_mutants(decode_kernel(cubin, kernel.name).instructions))
    bad = tmp_path / "bad.cubin"
    bad.write_bytes(patch_kernel(cubin, kernel, mutant.instructions))
    proc = subprocess.Popen(
        [sys.executable, "-m", "reorder", "verify", str(bad)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    proc.stdout.close()  # `| head -0`: the reader is gone before the first line
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err
    assert b"Traceback" not in err and b"Exception ignored" not in err


# ---------------------------------------------------------------- 7. endless inputs


def _bounded(*args: str) -> subprocess.CompletedProcess:
    """`reorder ARGS` in a child limited to 2 GiB of address space and 60 s: an unbounded read
    of /dev/zero or a blocking FIFO fails the test instead of taking the machine down."""
    import resource

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 * 2**30, 2 * 2**30))

    try:
        return subprocess.run(
            [sys.executable, "-m", "reorder", *args],
            capture_output=True,
            text=True,
            timeout=60,
            preexec_fn=limit,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"reorder {' '.join(args)} did not return within 60 s")


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_7_device_and_fifo_inputs_are_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for args, says in [
        (("disasm", "/dev/zero"), "character device"),
        (("verify", str(fifo)), "FIFO"),
        (("check", str(CUBIN), str(CUBIN), "--launch", "/dev/zero"), "character device"),
    ]:
        done = _bounded(*args)
        assert says in _one_line_refusal(done.returncode, done.stderr, args[0])


def test_7_inputs_are_read_up_to_a_stated_cap(tmp_path: Path) -> None:
    from reorder.base.errors import InputError
    from reorder.base.files import read_input

    big = tmp_path / "big.cubin"
    big.write_bytes(b"\0" * 2048)
    assert len(read_input(big, limit=2048)) == 2048
    with pytest.raises(InputError, match="larger than"):
        read_input(big, limit=1024)


# ---------------------------------------------------------------- 8. kills leave nothing behind


def _children(pid: int) -> set[int]:
    """Every live descendant of `pid` (from /proc)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] != "Z":
                parents[int(entry.name)] = int(fields[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _optimize_on_cpu(tmp_path: Path, env: dict, *flags: str, stderr=subprocess.DEVNULL) -> subprocess.Popen:
    """`reorder optimize` of the bundled RMSNorm on the CPU, started as its own process (the
    kill and SIGTERM tests signal it)."""
    command = [sys.executable, "-m", "reorder", "optimize", str(CUBIN), "-o", str(tmp_path / "f.cubin")]
    command += ["--kernel", "rmsnorm_triton_style", "--device", "cpu", *flags, "--assume-noalias"]
    return subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=stderr)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_8_kill_9_takes_the_search_workers_and_the_next_run_cleans_up(tmp_path: Path) -> None:
    """Its loky workers, their resource tracker and (--workers 2) the helper search process
    with its own loky workers: all gone within seconds of the parent's kill -9."""
    scratch = tmp_path / "scratch"
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", REORDER_SCRATCH=str(scratch))
    proc = _optimize_on_cpu(tmp_path, env, "--jobs", "2", "--workers", "2", "--budget", "60")
    deadline = time.monotonic() + 120
    workers: set[int] = set()
    while time.monotonic() < deadline and len(workers) < 5:  # helper, 2 + 2 loky workers (and trackers)
        time.sleep(0.5)
        workers = _children(proc.pid)
    assert len(workers) >= 5, f"the search never started its workers ({len(workers)} processes)"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and any(_alive(p) for p in workers):
        time.sleep(0.5)
    assert not any(_alive(p) for p in workers), "workers outlived their parent"
    assert list(scratch.glob("run-*")), "the killed run's folder is what the next run must clean"
    subprocess.run([sys.executable, "-m", "reorder", "verify", str(SMALL)], env=env, check=True, capture_output=True)
    assert not list(scratch.glob("run-*"))


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_8_kill_9_while_the_helper_search_still_imports_takes_it_too(tmp_path: Path) -> None:
    """The helper search process learns its starter's pid from its command line. It used to
    ask getppid() once its imports were done: a starter killed before then had left it
    reparented, it watched its new parent and searched on alone (CI saw it once)."""
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", REORDER_SCRATCH=str(tmp_path / "scratch"))
    proc = _optimize_on_cpu(tmp_path, env, "--jobs", "1", "--workers", "2", "--budget", "60")
    deadline = time.monotonic() + 120
    helpers: set[int] = set()
    while time.monotonic() < deadline and proc.poll() is None and not helpers:
        time.sleep(0.02)
        helpers = {p for p in _children(proc.pid) if "--search-only" in _cmdline(p)}
    assert helpers, "optimize never started its helper search process"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and any(_alive(p) for p in helpers):
        time.sleep(0.25)
    survivors = [p for p in helpers if _alive(p)]
    for pid in survivors:
        os.kill(pid, signal.SIGKILL)
    assert not survivors, "the helper search outlived the optimize that started it"


def test_8_sigterm_unwinds_and_removes_the_run_folder(tmp_path: Path) -> None:
    scratch = tmp_path / "scratch"
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", REORDER_SCRATCH=str(scratch))
    proc = _optimize_on_cpu(tmp_path, env, "--jobs", "1", "--budget", "40", stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not list(scratch.glob("run-*/reorder-search-*")):
        time.sleep(0.2)
    assert list(scratch.glob("run-*/reorder-search-*")), "the search never started"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert b"terminated" in err and b"Traceback" not in err
    assert not list(scratch.glob("run-*"))


def test_8_stale_run_folders_go_and_live_ones_stay(tmp_path: Path) -> None:
    import fcntl

    from reorder.base.lifetime import LOCK_NAME, clean_stale

    live, dead = tmp_path / "run-1-live", tmp_path / "run-2-dead"
    for folder in (live, dead):
        folder.mkdir()
        (folder / LOCK_NAME).touch()
    with open(live / LOCK_NAME, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        assert clean_stale(tmp_path) == [dead]
    assert live.exists() and not dead.exists()


def test_8_a_half_removed_folder_of_an_ended_run_goes(tmp_path: Path) -> None:
    """A run removing its folder while one of its workers still wrote into it can leave the folder
    without its lock file (CI saw one after a kill -9 of the parent): with its maker gone it is
    stale at once; a lockless folder of a live process stays while it is young."""
    from reorder.base.lifetime import clean_stale

    ended = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], check=True, capture_output=True, text=True
    )
    gone, mine = tmp_path / f"run-{int(ended.stdout)}-x", tmp_path / f"run-{os.getpid()}-y"
    for folder in (gone, mine):
        folder.mkdir()
        (folder / "left.tmp").touch()
    assert clean_stale(tmp_path) == [gone] and mine.is_dir()


def test_8_a_folder_being_made_is_not_taken_for_stale(tmp_path: Path, monkeypatch) -> None:
    """A cleaner that created a missing lock file could lock a folder another run had just
    made and not yet locked, and delete it under that run ("run-...-/.lock: No such file or
    directory" when two runs started together)."""
    from reorder.base.lifetime import LOCK_NAME, YOUNG_S, clean_stale, run_folder

    young, old = tmp_path / "run-1-young", tmp_path / "new-2-old"
    young.mkdir()
    old.mkdir()
    os.utime(old, (time.time() - 2 * YOUNG_S,) * 2)
    assert clean_stale(tmp_path) == [old] and young.is_dir() and not (young / LOCK_NAME).exists()
    monkeypatch.setenv("REORDER_SCRATCH", str(tmp_path))
    with run_folder() as folder:
        assert folder.name.startswith("run-") and folder not in clean_stale(tmp_path)
    assert not folder.exists()


# ---------------------------------------------------------------- 9. smaller things


def test_9_assume_noalias_before_the_cubin(tmp_path: Path, capsys) -> None:
    out = tmp_path / "x.cubin"
    code, stdout, err = _run(capsys, "batch-loads", "--assume-noalias", str(SMALL), "-o", str(out), "--no-slices")
    assert code == 0, err
    assert "ASSUMPTION: all pointer parameters" in stdout and out.exists()


def test_9_output_that_is_a_folder(tmp_path: Path, capsys) -> None:
    folder = tmp_path / "adir"
    folder.mkdir()
    line = _one_line_refusal(*_run(capsys, "stalls", str(SMALL), "-o", str(folder))[::2], "stalls")
    assert line.endswith("adir: is a folder; -o needs a file name")
    assert not list(folder.iterdir()) and not list(tmp_path.glob(".adir*"))


def test_9_optimize_refuses_a_folder_output_before_the_search(tmp_path: Path, capsys) -> None:
    """(The hard-linked output: tests/test_race_checks.py::test_a_hard_linked_output_is_refused_before_the_search.)"""
    folder = tmp_path / "adir"
    folder.mkdir()
    start = _cpu_seconds()
    line = _one_line_refusal(
        *_run(capsys, "optimize", str(SMALL), "-o", str(folder), "--device", "cpu", "--budget", "50")[::2], "optimize"
    )
    assert "is a folder" in line and _cpu_seconds() - start < 5
    assert not list(tmp_path.glob("*.reorder")) and not list(folder.iterdir())


def test_9_time_names_the_phases_it_bounds(tmp_path: Path, capsys) -> None:
    """`--time 5m` ran about 10 minutes: it now bounds the whole command; the help says so and
    gives the defaults, and the report gives each phase's duration."""
    from reorder.cli.main import build_parser

    help_text = " ".join(build_parser()._subparsers._group_actions[0].choices["optimize"].format_help().split())
    assert "wall-clock limit of the whole command" in help_text and "(default: 30m)" in help_text
    assert "(default: 100;" in help_text
    cubin = ROOT / "tests" / "corpus" / "cubin" / "sm_90" / "elementwise.cubin"
    out = tmp_path / "fast.cubin"
    assert (
        main(
            [
                "optimize",
                str(cubin),
                "--kernel",
                "saxpy_grid_stride",
                "-o",
                str(out),
                "--device",
                "cpu",
                "--budget",
                "2",
                "--jobs",
                "1",
                "--time",
                "90s",
            ]
        )
        == 0
    )
    report = (tmp_path / "fast.reorder" / "report.md").read_text()
    assert re.search(r"phases of --time 90 s .*: start and listing [\d.]+ s, search [\d.]+ s, finalists", report), (
        report
    )
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith(f"result: wrote {out}")


def test_9_broken_install_is_not_called_malformed_elf(monkeypatch) -> None:
    from reorder.base.errors import InputError, ReorderError
    from reorder.binary.cubin import parse_cubin

    for name in [m for m in sys.modules if m == "elftools" or m.startswith("elftools.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "elftools", None)  # import elftools... raises ImportError
    with pytest.raises(ReorderError, match="installation is broken") as info:
        parse_cubin(CUBIN.read_bytes(), "k.cubin")
    assert not isinstance(info.value, InputError) and "malformed ELF" not in str(info.value)


# ---------------------------------------------------------------- 10, 11. the search's budget and its winner
# (10: failures counted by kind: tests/test_race_checks.py::test_failures_are_counted_by_kind; predictable
# trials pruned before the GPU sees them: tests/test_pruned_trials.py)


class _ScoresByBytes:
    """A scorer that knows some binaries' scores (the rest score `other`): the winner's
    contributions made to order, as the README's run measured them."""

    measured = False

    def __init__(self, known: dict[bytes, float], other: float) -> None:
        self.known, self.other, self.scored = known, other, []

    def score(self, candidate: Path):
        from reorder.search.scoring import Score

        data = candidate.read_bytes()
        self.scored.append(data)
        value = self.known.get(data, self.other)
        return Score(value, value, value, False, {})


def test_11_the_winner_loses_the_moves_that_do_not_pay(tmp_path: Path) -> None:
    """The README's run kept slice_batch#0 although the winner scored better without it;
    backward elimination re-scores the winner without each move and drops the one whose
    removal scores best while that is no worse, then tries again."""
    from reorder.build.space import Choice, build_candidate
    from reorder.optimize import _prune

    cubin, kernel, full, built, scorer, args, report = _pruning_case(tmp_path)
    winner = scorer.score(_written(tmp_path, built[full]))
    choice, kept, final = _prune(args, kernel, (full, built[full], winner), scorer, tmp_path, report, _clock(args), 0)
    pruned = [n.split(":")[0] for n in report.notes if n.startswith("pruned ")]
    assert pruned == ["pruned load_batch#1", "pruned stall_cut#0"], report.notes  # better without; no worse without
    assert choice == Choice(load_batches=(0,)) and final.value == 0.85
    assert kept.data == build_candidate(str(cubin), kernel, False, choice).data  # what is written is the lean build
    assert len(scorer.scored) == 1 + 3 + 2  # the winner, its 3 removals, then the lean one's 2


def test_11_pruning_stops_at_the_end_of_time(tmp_path: Path) -> None:
    """Fuzz seed 4 on the GPU host: `optimize --budget 1 --time 20s` ran past 30 s (10 cases),
    all of it in the backward elimination after the search. Pruning is an improvement, not a
    check: past --time's end it scores nothing more, says so, and the winner so far stands."""
    from reorder.optimize import _prune

    _cubin, kernel, full, built, scorer, args, report = _pruning_case(tmp_path)
    winner = scorer.score(_written(tmp_path, built[full]))
    picked = (full, built[full], winner)
    late = _clock(args, started=time.monotonic() - args.seconds - 1)
    assert _prune(args, kernel, picked, scorer, tmp_path, report, late, 0) == picked
    assert len(scorer.scored) == 1 and "backward elimination stopped at --time after 0 round(s)" in report.notes


def _pruning_case(tmp_path: Path):
    """saxpy with two load batches and a stall cut (`full`), where one load batch less
    (`lean`) scores better: the builds, a scorer by bytes, optimize's arguments, a report."""
    from reorder.build.space import Choice, build_candidate
    from reorder.optimize import OptimizeArgs
    from reorder.report.markdown import Report

    cubin = ROOT / "tests" / "corpus" / "cubin" / "sm_90" / "elementwise.cubin"
    kernel = "saxpy_grid_stride"
    full, lean = Choice(load_batches=(0, 1), stall_cuts=(0,)), Choice(load_batches=(0,), stall_cuts=(0,))
    built = {c: build_candidate(str(cubin), kernel, False, c) for c in (full, lean)}
    scorer = _ScoresByBytes({built[full].data: 0.90, built[lean].data: 0.85}, other=0.97)
    args = OptimizeArgs(
        cubin=cubin,
        output=tmp_path / "o.cubin",
        kernel=kernel,
        launch=None,
        budget=1,
        seconds=60.0,
        jobs=1,
        storage=None,
        l2="warm",
        device="cpu",
        noalias=False,
        seed=0,
    )
    return cubin, kernel, full, built, scorer, args, Report(kernel, "sm_90", str(cubin), "", 1, 0, 0, "", None)


def _clock(args, started: float | None = None):
    """The run's clock as optimize keeps it: --time from `started` (default now), no costs yet."""
    from reorder.base.deadline import Deadline
    from reorder.optimize import Clock, _rule
    from reorder.search.budget import Costs

    return Clock(Deadline(time.monotonic() if started is None else started, args.seconds), _rule(args, False), Costs())


def _written(tmp_path: Path, built) -> Path:
    path = tmp_path / "winner.cubin"
    path.write_bytes(built.data)
    return path


# ---------------------------------------------------------------- found by benchmarks.fuzz


def test_fuzz_ptx_declaring_billions_of_registers_is_refused_before_ptxas(tmp_path: Path, capsys) -> None:
    """Fuzz seed 1, mutant 1089: `.reg .b32 %r<2147483648>;` held ptxas for 26-42 s (16 GB
    allocated) before 'Constant overflow' — a hang past the fuzzer's 30 s."""
    ptx = (ROOT / "tests" / "corpus" / "ptx" / "sm_90" / "elementwise.ptx").read_text()
    mutant = tmp_path / "huge_regs.ptx"
    mutant.write_text(re.sub(r"%r<\d+>", "%r<2147483648>", ptx, count=1))
    start = _cpu_seconds()
    line = _one_line_refusal(*_run(capsys, "disasm", str(mutant))[::2], "disasm")
    assert "virtual registers" in line and _cpu_seconds() - start < 10


def test_an_empty_kernel_name_is_refused_not_read_as_every_kernel(capsys) -> None:
    """`--kernel "$K"` with K unset disassembled, verified or stalled every kernel (exit 0)."""
    for command in (
        ("disasm", str(SMALL)),
        ("verify", str(SMALL)),
        ("diff", str(SMALL), str(SMALL)),
        ("stalls", str(SMALL), "-o", "/nonexistent/o.cubin"),
    ):
        with pytest.raises(SystemExit) as done:
            main([*command, "--kernel", " "])
        assert done.value.code == 2
        assert "an empty name names no kernel" in capsys.readouterr().err


def test_8_a_sigterm_whose_raise_a_gc_callback_swallowed_still_ends_the_run(monkeypatch) -> None:
    """CI saw SIGTERM's Terminated raised inside SQLAlchemy's weakref callback: Python printed
    it and dropped it, and optimize searched on past the test's minute. The handler now also
    remembers the signal, and the search loop asks at its safe points. The dropped raise is not
    printed either: the run's last line says it was terminated, with no traceback above it."""
    import gc
    import weakref

    from reorder.base.lifetime import Terminated, raise_if_terminated, terminate_on_sigterm

    class Held:
        pass

    def callback(_ref) -> None:  # runs Python code, so the signal's handler runs in here
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(1000):
            time.sleep(0.001)

    dropped = []
    monkeypatch.setattr(sys, "unraisablehook", lambda info: dropped.append(info.exc_type))
    with terminate_on_sigterm():
        held = Held()
        ref = weakref.ref(held, callback)
        del held
        gc.collect()
        assert ref() is None and dropped == []  # raised in the callback, dropped unprinted
        held = Held()
        ref = weakref.ref(held, lambda _ref: 1 / 0)
        del held
        gc.collect()
        assert dropped == [ZeroDivisionError]  # any other error still reaches the hook
        with pytest.raises(Terminated):
            raise_if_terminated()
    raise_if_terminated()  # outside, the signal is forgotten: nothing to raise
