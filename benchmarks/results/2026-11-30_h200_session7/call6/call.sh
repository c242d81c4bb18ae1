# Call 6 (seventh session, nvidia-h200-x2): lane 0 asks whether the two slice batches the new rule does not
# explain fail from their stalls (a twin with every stall raised to 11 or more) and, where the slow twin is
# right, bisects the stalls; lane 1 cfo_ta_est with one winner per sweep point (issue 16), then single moves
# over the corpus and suite at this commit (built on the CPU).
# carry [".whl", "gpu_code", "gpu_build/pack.tgz"] (pack.tgz: confirm2, loops, moves)
. gpu_code/calls/head.sh
lane0() {
  export CUDA_VISIBLE_DEVICES=0
  echo "pair,variant,rc,line" > $R/slow.csv
  for name in rmsnorm_row_fp32_w8 rmsnorm_row_fp16_w4; do
    spec=$B/confirm2/$name.1024x4096.json
    for v in fast slow; do
      timeout 100 python -m reorder check $B/confirm2/$name.original.cubin $B/confirm2/$name.$v.cubin --launch $spec --sets 3 > $R/check.txt 2>&1
      rc=$?; echo "$name,$v,$rc,\"$(tail -1 $R/check.txt | tr ',"' '; ')\"" >> $R/slow.csv
      [ $v = slow ] && slow_rc=$rc
    done
    stamp "$name slow rc=$slow_rc"
    if [ "$slow_rc" = 0 ]; then
      left=$(( 520 - ($(date +%s) - T0) ))
      timeout $(( left / 2 )) python -m benchmarks.bisect_gpu --out $R/bisect_$name --max-culprits 3 \
        --pair $B/confirm2/$name.slow.cubin:$B/confirm2/$name.fast.cubin:$spec > $R/bisect_$name.log 2>&1; stamp "bisect $name rc=$?"
    fi
  done
}
lane1() {
  export CUDA_VISIBLE_DEVICES=1
  stamp "loops start"; timeout 200 taskset -c 12-31 python -m benchmarks.loops_gpu --build $B/loops --out $R/loops --cells none --per-point --kernels cfo_ta_est --deadline 180 > $R/loops.log 2>&1; stamp "loops rc=$?"
  left=$(( 545 - ($(date +%s) - T0) ))
  stamp "moves start ($left s left)"; timeout $left taskset -c 12-31 python -m benchmarks.moves_gpu --run $B/moves --out $R/moves > $R/moves.log 2>&1; stamp "moves rc=$?"
}
lane0 > $R/lane0.log 2>&1 &
lane1 > $R/lane1.log 2>&1 &
wait
finish call6
