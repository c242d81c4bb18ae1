"""Slow twins: every stall raised to at least 11 (instructions, order, scoreboards unchanged), so a
failure that survives is not a fixed-latency timing one; a pass makes a stall-only bisect possible."""
import json, shutil
from pathlib import Path
from reorder.binary.cubin import read_cubin
from reorder.sass.model import decode_kernel
from reorder.sass.writer import patch_kernel
from legality.verify import verify_kernel
SRC = Path("gpu_build/confirm"); W = Path("tests/data/silicon_wrong"); OUT = Path("gpu_build/confirm2")
m = json.load(open("gpu_build/triton/manifest.json")); fams = {f["name"]: f for f in m["families"]}
jobs = (("rmsnorm_row_fp32_w8", SRC / "rmsnorm_row_fp32_w8.repaired.cubin", "rmsnorm_row_fp32", "num_warps8", "1024x4096"),
        ("rmsnorm_row_fp16_w4", W / "rmsnorm_row_fp16_w4.candidate.cubin", "rmsnorm_row_fp16", "num_warps4", "1024x4096"))
for name, cand_path, fam, label, shape in jobs:
    cand = decode_kernel(read_cubin(cand_path))
    slow = tuple(i.with_ctrl(i.ctrl.with_(stall=max(i.ctrl.stall, 11))) if i.ctrl.stall < 11 else i for i in cand.instructions)
    assert all(i.ctrl.encoding_problem() is None for i in slow)
    shutil.copy(W / f"{name}.original.cubin", OUT / f"{name}.original.cubin")
    shutil.copy(cand_path, OUT / f"{name}.fast.cubin")
    (OUT / f"{name}.slow.cubin").write_bytes(patch_kernel(cand.cubin, cand.kernel, slow, cand.kernel.regcount))
    cfg = next(c for c in fams[fam]["configs"] if c["label"] == label)
    (OUT / f"{name}.{shape}.json").write_text(json.dumps(cfg["specs"][shape]))
    print(name, "stalls raised", sum(a.word != b.word for a, b in zip(slow, cand.instructions)), "verify slow:", verify_kernel(cand, slow).ok)
