"""gpu_build/structs3: the structs build with only what call 2 did not measure (the CFO/TA pair, k100's searches)."""

import json, shutil
from pathlib import Path

src, dst = Path("/work/main/gpu_build/structs"), Path("/work/main/gpu_build/structs3")
shutil.rmtree(dst, ignore_errors=True)
shutil.copytree(src, dst)
rows = [json.loads(p.read_text()) for p in sorted(src.glob("*.json")) if p.name != "manifest.json"]
m = json.loads((src / "manifest.json").read_text())
keep = [r for r in rows if r["pair"] == "cfo_ta_est" or (r["pair"] == "warp_select_k100" and r["move"] == "search")]
order = {"warp_select_k32": 0, "warp_select_k100": 1, "cfo_ta_est": 2}
keep.sort(key=lambda r: (order[r["pair"]], ("stalls", "batch", "search").index(r["move"]), r["form"]))
m["candidates"] = keep
(dst / "manifest.json").write_text(json.dumps(m, indent=1))
print(len(keep), [(r["pair"], r["form"], r["move"], r["built"]) for r in keep])
