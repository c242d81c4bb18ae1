# Call 2 (nvidia-h200-x2, ~560 s): lane 0 Triton (issue 17); lane 1 single moves over the corpus at this
# commit (the scheduler fix's outputs byte-checked on silicon), then warp_select_k100's two-level search.
# carry [".whl", "gpu_code", "gpu_build/pack.tgz"]
. gpu_code/calls/head.sh
lane0() {
  export CUDA_VISIBLE_DEVICES=0
  stamp "triton start"; timeout 545 taskset -c 0-9 python -m benchmarks.triton_gpu --build $B/triton --out $R/triton --deadline 500 > $R/triton.log 2>&1; stamp "triton rc=$?"
}
lane1() {
  export CUDA_VISIBLE_DEVICES=1
  stamp "moves prepare"; timeout 130 taskset -c 10-31 python -m benchmarks.moves_gpu --prepare /tmp/moves --jobs 22 > $R/moves_prepare.log 2>&1; stamp "prepare rc=$?"
  stamp "moves start"; timeout 280 taskset -c 10-31 python -m benchmarks.moves_gpu --run /tmp/moves --out $R/moves > $R/moves.log 2>&1; stamp "moves rc=$?"
  left=$(( 550 - ($(date +%s) - T0) ))
  stamp "ptx k100 start ($left s left)"; timeout $left taskset -c 10-31 python -m benchmarks.ptx_search_gpu --build $B/ptx_search4 --out $R/ptx --deadline $(( left - 20 )) --kernels warp_select_k100 > $R/ptx.log 2>&1; stamp "ptx rc=$?"
}
lane0 > $R/lane0.log 2>&1 &
lane1 > $R/lane1.log 2>&1 &
wait
finish call2
