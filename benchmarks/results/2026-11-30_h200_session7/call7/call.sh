# Call 7 (seventh session, nvidia-h200, ~60 s): the two slice batches whose slow twins still failed, now with
# every instruction also waiting on all six scoreboards (fully serialized), each against the original and
# beside the original serialized the same way (the control); A/A runs of the two order-dependent corpus kernels.
# carry [".whl", "gpu_code", "gpu_build/pack.tgz"] (pack.tgz: confirm2)
. gpu_code/calls/head.sh
echo "pair,reference,variant,rc,line" > $R/serial.csv
for name in rmsnorm_row_fp32_w8 rmsnorm_row_fp16_w4; do
  for v in original_serial fast_serial fast; do
    timeout 100 python -m reorder check $B/confirm2/$name.original.cubin $B/confirm2/$name.$v.cubin --launch $B/confirm2/$name.1024x4096.json --sets 3 > $R/check.txt 2>&1
    rc=$?; echo "$name,original,$v,$rc,\"$(tail -1 $R/check.txt | tr ',"' '; ')\"" >> $R/serial.csv
  done
done
for k in warp_reduce_atomic:reduce atomic_minmax_int:atomics; do
  kernel=${k%%:*}; cubin=tests/corpus/cubin/sm_90/${k##*:}.cubin
  timeout 100 python -m reorder check $cubin $cubin --kernel $kernel --launch tests/corpus/specs/$kernel.toml --sets 5 > $R/check.txt 2>&1
  rc=$?; echo "$kernel,itself,itself,$rc,\"$(tail -1 $R/check.txt | tr ',"' '; ')\"" >> $R/serial.csv
done
cat $R/serial.csv
finish call7
