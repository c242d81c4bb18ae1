# Call 8 (seventh session, nvidia-h200, ~60 s): the two slice batches the refined read rule rejects (an STS's
# registers overwritten before any wait proves them read; a BAR.SYNC does not), repaired by the rule alone
# (the STS gets a read scoreboard, the overwriting ops wait on it), at every Triton shape.
# carry [".whl", "gpu_code", "gpu_build/pack.tgz"] (pack.tgz: confirm3)
. gpu_code/calls/head.sh
echo "pair,variant,shape,rc,line" > $R/repaired.csv
for name in rmsnorm_row_fp32_w8 rmsnorm_row_fp16_w4; do
  for spec in $B/confirm3/$name.*.json; do
    shape=$(basename $spec .json); shape=${shape#$name.}
    for v in candidate repaired; do
      timeout 100 python -m reorder check $B/confirm3/$name.original.cubin $B/confirm3/$name.$v.cubin --launch $spec --sets 3 > $R/check.txt 2>&1
      rc=$?; echo "$name,$v,$shape,$rc,\"$(tail -1 $R/check.txt | tr ',"' '; ')\"" >> $R/repaired.csv
    done
  done
done
cat $R/repaired.csv
finish call8
