#!/bin/bash
# Device run: byte checks at 1-1024 rows, then paired timings (L2 warm). Run from this folder; results under $OUT.
set -u
O=${OUT:-.}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu --format=csv > $O/clocks_before.csv 2>&1
for K in rmsnorm_triton_style rms_norm_f32; do for R in 1 16 256 1024; do
  echo "== check ${K}_prefetch r$R" >> $O/check.txt
  timeout -k 5 25 python -m reorder check rmsnorm.cubin ${K}_prefetch.cubin --kernel $K --launch ${K}_r$R.toml --sets 5 >> $O/check.txt 2>&1; echo "rc=$?" >> $O/check.txt
done; done
for P in "rms_norm_f32 1" "rms_norm_f32 16" "rms_norm_f32 1024" "rmsnorm_triton_style 1" "rmsnorm_triton_style 16" "rmsnorm_triton_style 256" "rmsnorm_triton_style 1024" "rms_norm_f32 256"; do
  set -- $P
  echo "== time ${1}_prefetch r$2" >> $O/time.txt
  timeout -k 5 30 python -m reorder time rmsnorm.cubin ${1}_prefetch.cubin --kernel $1 --launch ${1}_r$2.toml --budget 6 >> $O/time.txt 2>&1; echo "rc=$?" >> $O/time.txt
done
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu --format=csv > $O/clocks_after.csv 2>&1
