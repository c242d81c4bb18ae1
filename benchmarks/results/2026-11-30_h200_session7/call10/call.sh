# Call 10 (seventh session, nvidia-h200, ~150 s): normalize_weights, main CDF loop, further: Prefetch 4 and UnrollBatch 8 (a pointer
# stepped through a copy is an induction), one winner per sweep point (issue 16).
# carry [".whl", "gpu_code", "gpu_build/pack.tgz"] (pack.tgz: loops8)
. gpu_code/calls/head.sh
stamp "loops start"; timeout 280 python -m benchmarks.loops_gpu --build $B/loops8 --out $R/loops --cells none --per-point --kernels normalize_weights --deadline 260 > $R/loops.log 2>&1; stamp "loops rc=$?"
tail -12 $R/loops/summary.md
finish call10
