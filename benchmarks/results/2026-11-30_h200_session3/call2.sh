. gpu_code/calls/head.sh
lane0() {
  export CUDA_VISIBLE_DEVICES=0
  stamp "spmv start"; timeout 400 taskset -c 0-15 python -m benchmarks.correctness_gpu optimize $B/correctness --out $R/opt --kernels spmv_csr_vector --budget 40 --seconds 60 --jobs 15 > $R/opt_spmv.log 2>&1; stamp "spmv rc=$?"
  timeout 135 taskset -c 0-15 python -m benchmarks.structs_gpu --build $B/structs --out $R/structs --deadline 110 > $R/structs.log 2>&1; stamp "structs rc=$?"
}
lane1() {
  export CUDA_VISIBLE_DEVICES=1
  stamp "k32 start"; timeout 545 taskset -c 16-31 python -m benchmarks.correctness_gpu optimize $B/correctness --out $R/opt --kernels warp_select_k32 --budget 40 --seconds 90 --jobs 15 > $R/opt_k32.log 2>&1; stamp "k32 rc=$?"
}
lane0 > $R/lane0.log 2>&1 &
lane1 > $R/lane1.log 2>&1 &
wait
finish call2
