# Call 15 (ninth session, nvidia-h200, ~570 s): the whole Triton benchmark again with the wider loop choices
# (Prefetch 1-4, UnrollBatch 2/4) beside the wgmma move, then the GPU test tier (with the new test of the
# hook's feed-forward twin).
# carry [".whl", "gpu_code", "gpu_build/pack.tgz"] (pack.tgz: triton_w2)
. gpu_code/calls/head.sh
stamp "triton start"; timeout 400 python -m benchmarks.triton_gpu --build $B/triton_w2 --out $R/triton --deadline 370 > $R/triton.log 2>&1; stamp "triton rc=$?"
tail -3 $R/triton.log
grep -A 8 "^## Totals" $R/triton/summary.md
left=$(( 575 - ($(date +%s) - T0) ))
stamp "gpu tests start ($left s left)"; timeout $left python -m pytest -v -m gpu tests/gpu -p no:cacheprovider > $R/gpu_tests.txt 2>&1; echo "rc=$?" >> $R/gpu_tests.txt; stamp "gpu tests done"
tail -12 $R/gpu_tests.txt
finish call15
