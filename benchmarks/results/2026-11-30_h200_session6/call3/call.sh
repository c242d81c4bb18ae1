# Call 3 (nvidia-h200-x2, ~540 s): lane 0 the Triton benchmark again (issue 17: time_builds fixed; candidates
# rebuilt with the verifier's new rules); lane 1 bisects of two verified-but-wrong stall cuts, then the
# suite loop kernels with one winner per sweep point (issue 16).
# carry [".whl", "gpu_code", "gpu_build/pack.tgz"] (pack.tgz: triton, loops, bisect)
. gpu_code/calls/head.sh
lane0() {
  export CUDA_VISIBLE_DEVICES=0
  stamp "triton start"; timeout 520 taskset -c 0-11 python -m benchmarks.triton_gpu --build $B/triton --out $R/triton --deadline 480 > $R/triton.log 2>&1; stamp "triton rc=$?"
}
lane1() {
  export CUDA_VISIBLE_DEVICES=1
  stamp "bisect start"; timeout 150 taskset -c 12-31 python -m benchmarks.bisect_gpu --out $R/bisect --max-culprits 3 \
    --pair $B/bisect/int64.cubin:$B/bisect/mulhi_stallcut.cubin:$B/bisect/mulhi_accumulate.toml:mulhi_accumulate \
    --pair $B/bisect/softmax_w8_original.cubin:$B/bisect/softmax_w8_sass.cubin:$B/bisect/softmax_w8.json > $R/bisect.log 2>&1; stamp "bisect rc=$?"
  left=$(( 525 - ($(date +%s) - T0) ))
  stamp "loops per-point ($left s left)"; timeout $left taskset -c 12-31 python -m benchmarks.loops_gpu --build $B/loops --out $R/loops --cells none --per-point --deadline $(( left - 25 )) > $R/loops.log 2>&1; stamp "loops rc=$?"
}
lane0 > $R/lane0.log 2>&1 &
lane1 > $R/lane1.log 2>&1 &
wait
finish call3
