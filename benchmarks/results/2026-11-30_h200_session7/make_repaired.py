"""Repaired twins of the two silicon-wrong slice batches the new rule rejects: each violation
fixed in the smallest way (a wait on the scoreboard, or the stall before the consumer raised),
nothing else changed; plus the launch specs of their Triton shapes, as JSON."""
import json, shutil
from pathlib import Path
from reorder.binary.cubin import read_cubin
from reorder.sass.model import decode_kernel
from reorder.sass.writer import patch_kernel
from legality.verify import verify_kernel
W = Path("tests/data/silicon_wrong"); OUT = Path("gpu_build/confirm")
m = json.load(open("gpu_build/triton/manifest.json"))
fams = {f["name"]: f for f in m["families"]}
for name, fam, label in (("rmsnorm_looped_fp16_ls1_w8", "rmsnorm_looped_fp16", "LOOP_STAGES1-num_warps8"),
                         ("rmsnorm_row_fp32_w8", "rmsnorm_row_fp32", "num_warps8")):
    orig = decode_kernel(read_cubin(W / f"{name}.original.cubin"))
    cand = decode_kernel(read_cubin(W / f"{name}.candidate.cubin"))
    ins = list(cand.instructions)
    idx = {i.offset: n for n, i in enumerate(ins)}
    for _ in range(10):
        rep = verify_kernel(cand, tuple(ins), original=orig.instructions)
        if rep.ok: break
        for v in rep.violations:
            j = idx[v.consumer_offset]
            if v.kind == "scoreboard" and v.scoreboard is not None:
                ins[j] = ins[j].with_ctrl(ins[j].ctrl.with_(wait=ins[j].ctrl.wait | 1 << v.scoreboard))
            elif isinstance(v.required, int):
                k = j - 1
                ins[k] = ins[k].with_ctrl(ins[k].ctrl.with_(stall=min(15, ins[k].ctrl.stall + v.required - v.provided)))
            print(name, "fixed", v.line())
    assert verify_kernel(cand, tuple(ins), original=orig.instructions).ok
    changed = sum(a.word != b.word for a, b in zip(ins, cand.instructions))
    print(name, "instructions changed", changed)
    shutil.copy(W / f"{name}.original.cubin", OUT / f"{name}.original.cubin")
    shutil.copy(W / f"{name}.candidate.cubin", OUT / f"{name}.candidate.cubin")
    (OUT / f"{name}.repaired.cubin").write_bytes(patch_kernel(cand.cubin, cand.kernel, tuple(ins), cand.kernel.regcount))
    cfg = next(c for c in fams[fam]["configs"] if c["label"] == label)
    for shape, spec in cfg["specs"].items():
        (OUT / f"{name}.{shape}.json").write_text(json.dumps(spec))
