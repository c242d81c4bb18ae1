. gpu_code/calls/head.sh
lane0() {
  export CUDA_VISIBLE_DEVICES=0
  stamp "moves prepare"; timeout 150 taskset -c 0-15 python -m benchmarks.moves_gpu --prepare /tmp/moves --jobs 15 > $R/moves_prepare.log 2>&1; stamp "prepare rc=$?"
  stamp "moves start"; timeout 400 taskset -c 0-15 python -m benchmarks.moves_gpu --run /tmp/moves --out $R/moves > $R/moves.log 2>&1; stamp "moves rc=$?"
}
lane1() {
  export CUDA_VISIBLE_DEVICES=1
  stamp "spmv start"; timeout 300 taskset -c 16-31 python -m benchmarks.correctness_gpu optimize $B/correctness --out $R/opt --kernels spmv_csr_vector --budget 40 --seconds 40 --jobs 14 > $R/opt_spmv.log 2>&1; stamp "spmv rc=$?"
  timeout 245 taskset -c 16-31 python -m benchmarks.correctness_gpu optimize $B/correctness --out $R/opt --kernels warp_select_k32 --budget 40 --seconds 30 --jobs 14 > $R/opt_k32.log 2>&1; stamp "k32 rc=$?"
}
lane0 > $R/lane0.log 2>&1 &
lane1 > $R/lane1.log 2>&1 &
wait
finish call1
