#!/bin/bash
# Device run: byte checks, then paired timings (L2 warm). Run from this folder; results under $OUT.
set -u
O=${OUT:-.}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu --format=csv > $O/clocks_before.csv 2>&1
for K in rmsnorm_row_fp32 rmsnorm_row_fp16; do for R in 1 16 1024; do
  echo "== check ${K}_prefetch r$R" >> $O/check.txt
  timeout -k 5 25 python -m reorder check $K.cubin ${K}_prefetch.cubin --launch ${K}_r$R.toml --sets 5 >> $O/check.txt 2>&1; echo "rc=$?" >> $O/check.txt
done; done
for K in rmsnorm_row_fp32 rmsnorm_row_fp16; do for R in 1 16 1024; do
  echo "== time ${K}_prefetch r$R" >> $O/time.txt
  timeout -k 5 30 python -m reorder time $K.cubin ${K}_prefetch.cubin --launch ${K}_r$R.toml --budget 6 >> $O/time.txt 2>&1; echo "rc=$?" >> $O/time.txt
done; done
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu --format=csv > $O/clocks_after.csv 2>&1
