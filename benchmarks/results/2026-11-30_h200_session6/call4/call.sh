# Call 4 (nvidia-h200-x2, ~200 s, the session's last device time): lane 0 every Triton candidate built by the
# final verifier, byte-checked (timing kept short: the check is the point); lane 1 the two suite loop
# kernels call 3's per-point run did not reach.
# carry [".whl", "gpu_code", "gpu_build/pack.tgz"] (pack.tgz: triton, loops)
. gpu_code/calls/head.sh
lane0() {
  export CUDA_VISIBLE_DEVICES=0
  stamp "triton start"; timeout 185 taskset -c 0-11 python -m benchmarks.triton_gpu --build $B/triton --out $R/triton --deadline 170 --l2 warm --cell-budget 0.15 --no-jit-check --no-readme > $R/triton.log 2>&1; stamp "triton rc=$?"
}
lane1() {
  export CUDA_VISIBLE_DEVICES=1
  stamp "loops start"; timeout 185 taskset -c 12-31 python -m benchmarks.loops_gpu --build $B/loops --out $R/loops --cells none --per-point --kernels warp_select_k100,cfo_ta_est --deadline 165 > $R/loops.log 2>&1; stamp "loops rc=$?"
}
lane0 > $R/lane0.log 2>&1 &
lane1 > $R/lane1.log 2>&1 &
wait
finish call4
