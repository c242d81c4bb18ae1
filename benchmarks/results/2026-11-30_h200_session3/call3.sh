. gpu_code/calls/head.sh
fuzz() {
  stamp "fuzz start"; timeout 520 nice -n 19 taskset -c 12-31 python -m benchmarks.fuzz --workers 20 --minutes 8 --seed 4 --timeout 30 --out $R/fuzz > $R/fuzz.log 2>&1; stamp "fuzz rc=$?"
}
lane0() {
  export CUDA_VISIBLE_DEVICES=0
  stamp "k100 start"; timeout 525 taskset -c 0-7 python -m benchmarks.correctness_gpu optimize $B/correctness --out $R/opt --kernels warp_select_k100 --budget 40 --seconds 45 --jobs 8 > $R/opt_k100.log 2>&1; stamp "k100 rc=$?"
}
lane1() {
  export CUDA_VISIBLE_DEVICES=1
  stamp "ptx start"; timeout 235 taskset -c 8-11 python -m benchmarks.ptx_search_gpu --build $B/ptx_search --out $R/ptx --deadline 215 > $R/ptx.log 2>&1; stamp "ptx rc=$?"
  timeout 230 taskset -c 8-11 python -m benchmarks.loops_gpu --build $B/loops --out $R/loops --deadline 210 > $R/loops.log 2>&1; stamp "loops rc=$?"
  timeout 65 taskset -c 8-11 python -m benchmarks.structs_gpu --build $B/structs3 --out $R/structs --deadline 50 > $R/structs.log 2>&1; stamp "structs rc=$?"
}
fuzz > $R/lane_fuzz.log 2>&1 &
lane0 > $R/lane0.log 2>&1 &
lane1 > $R/lane1.log 2>&1 &
wait
finish call3
