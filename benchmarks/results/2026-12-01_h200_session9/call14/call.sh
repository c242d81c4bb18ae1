# Call 14 (ninth session, nvidia-h200, ~450 s): the wgmma move (reorder.ptx.wgmma) on silicon. First its edge
# trip counts (K = 0, 64, 128, 192: loop skipped, once, a few times) for every feed-forward config and wgmma
# candidate, byte-checked against the original; then the whole Triton benchmark (issue 17) with the new
# candidates, and the README example (now the autotuned feed-forward) at its end.
# carry [".whl", "gpu_code", "gpu_build/pack.tgz"] (pack.tgz: triton_w)
. gpu_code/calls/head.sh
stamp "edges start"; timeout 120 python -m benchmarks.wgmma_edges --build $B/triton_w --out $R/edges --sets 3 --jobs 4 > $R/edges.log 2>&1; stamp "edges rc=$?"
tail -3 $R/edges.log
left=$(( 545 - ($(date +%s) - T0) ))
stamp "triton start ($left s left)"; timeout $left python -m benchmarks.triton_gpu --build $B/triton_w --out $R/triton --deadline $(( left - 90 )) > $R/triton.log 2>&1; stamp "triton rc=$?"
tail -4 $R/triton.log
grep -A 12 "^## Totals" $R/triton/summary.md
finish call14
