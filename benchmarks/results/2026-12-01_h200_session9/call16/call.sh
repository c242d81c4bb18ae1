# Call 16 (ninth session, nvidia-h200, ~330 s): the whole Triton benchmark with the baseline widened to tl.range
# stages 1-4 (LOOP_STAGES 4 added: 76 configs), reorder with Prefetch 1-4, UnrollBatch 2/4 and the wgmma move.
# carry [".whl", "gpu_code", "gpu_build/pack.tgz"] (pack.tgz: triton_w3)
. gpu_code/calls/head.sh
stamp "triton start"; timeout 450 python -m benchmarks.triton_gpu --build $B/triton_w3 --out $R/triton --deadline 420 > $R/triton.log 2>&1; stamp "triton rc=$?"
tail -3 $R/triton.log
grep -A 8 "^## Totals" $R/triton/summary.md
finish call16
