# Call 1 of the sixth session (nvidia-h200-x2, ~570 s): lane 0 Triton (issue 17), lane 1 the PTX-search
# kernels (issue 15) and the loop cell + suite loop kernels (issue 16) the last runs did not reach.
# carry [".whl", "gpu_code", "gpu_build/pack.tgz"] (pack.tgz: triton, ptx_search4, loops)
. gpu_code/calls/head.sh
lane0() {  # issue 17: the Triton benchmark, never run on a GPU yet
  export CUDA_VISIBLE_DEVICES=0
  stamp "triton start"; timeout 545 taskset -c 0-11 python -m benchmarks.triton_gpu --build $B/triton --out $R/triton --deadline 500 > $R/triton.log 2>&1; stamp "triton rc=$?"
}
lane1() {  # issues 15 and 16
  export CUDA_VISIBLE_DEVICES=1
  stamp "ptx start"; timeout 215 taskset -c 12-23 python -m benchmarks.ptx_search_gpu --build $B/ptx_search4 --out $R/ptx --deadline 195 > $R/ptx.log 2>&1; stamp "ptx rc=$?"
  timeout 320 taskset -c 12-23 python -m benchmarks.loops_gpu --build $B/loops --out $R/loops --deadline 300 --cells 8192:1024:1024:8 --kernels warp_select_k32,warp_select_k100,cfo_ta_est,spmv_csr_vector,rms_norm_f32,embedding_bag_mean > $R/loops.log 2>&1; stamp "loops rc=$?"
}
lane0 > $R/lane0.log 2>&1 &
lane1 > $R/lane1.log 2>&1 &
wait
finish call_next
