# Call 5 (seventh session, nvidia-h200-x2, ~570 s): lane 0 confirms the new read rule on silicon (the two
# slice batches it rejects, and their twins repaired by the rule alone), then the Triton benchmark at this
# commit (issue 17); lane 1 the two suite loop kernels with one winner per sweep point (issue 16), then
# single moves over the corpus at this commit.
# carry [".whl", "gpu_code", "gpu_build/pack.tgz"] (pack.tgz: triton, loops, confirm)
. gpu_code/calls/head.sh
confirm() {
  echo "pair,variant,shape,rc,line" > $R/confirm.csv
  for name in rmsnorm_looped_fp16_ls1_w8 rmsnorm_row_fp32_w8; do
    for spec in $B/confirm/$name.*.json; do
      shape=$(basename $spec .json); shape=${shape#$name.}
      for v in candidate repaired; do
        timeout 100 python -m reorder check $B/confirm/$name.original.cubin $B/confirm/$name.$v.cubin --launch $spec --sets 3 > $R/check.txt 2>&1
        rc=$?
        line=$(tail -1 $R/check.txt | tr ',"' '; ')
        echo "$name,$v,$shape,$rc,\"$line\"" >> $R/confirm.csv
      done
    done
  done
}
lane0() {
  export CUDA_VISIBLE_DEVICES=0
  stamp "confirm start"; confirm > $R/confirm.log 2>&1; stamp "confirm done"
  left=$(( 545 - ($(date +%s) - T0) ))
  stamp "triton start ($left s left)"; timeout $left taskset -c 0-11 python -m benchmarks.triton_gpu --build $B/triton --out $R/triton --deadline $(( left - 45 )) > $R/triton.log 2>&1; stamp "triton rc=$?"
}
lane1() {
  export CUDA_VISIBLE_DEVICES=1
  stamp "loops start"; timeout 230 taskset -c 12-31 python -m benchmarks.loops_gpu --build $B/loops --out $R/loops --cells none --per-point --kernels warp_select_k100,cfo_ta_est --deadline 210 > $R/loops.log 2>&1; stamp "loops rc=$?"
  stamp "moves prepare"; timeout 100 taskset -c 12-31 python -m benchmarks.moves_gpu --prepare /tmp/moves --jobs 20 > $R/moves_prepare.log 2>&1; stamp "prepare rc=$?"
  left=$(( 550 - ($(date +%s) - T0) ))
  stamp "moves start ($left s left)"; timeout $left taskset -c 12-31 python -m benchmarks.moves_gpu --run /tmp/moves --out $R/moves > $R/moves.log 2>&1; stamp "moves rc=$?"
}
lane0 > $R/lane0.log 2>&1 &
lane1 > $R/lane1.log 2>&1 &
wait
finish call5
