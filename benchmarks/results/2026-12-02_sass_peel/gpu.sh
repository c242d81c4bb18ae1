#!/bin/bash
# Device run of this study: byte checks, then paired timings. Run from this folder; results under $OUT.
set -u
O=${OUT:-.}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu --format=csv > $O/clocks_before.csv 2>&1
for K in rmsnorm_triton_style rms_norm_f32; do
  for C in peeled peel; do
    for R in 1 16 256 1024; do
      echo "== check $K ${K}_$C r$R" >> $O/check.txt
      timeout -k 5 25 python -m reorder check rmsnorm.cubin ${K}_$C.cubin --kernel $K --launch ${K}_r$R.toml --sets 3 >> $O/check.txt 2>&1
      echo "rc=$?" >> $O/check.txt
    done
  done
done
for P in "rmsnorm_triton_style peel 1" "rmsnorm_triton_style peel 16" "rmsnorm_triton_style blocks 1" "rmsnorm_triton_style peeled 1" \
         "rms_norm_f32 peel 1" "rms_norm_f32 peel 16" "rms_norm_f32 peeled 1"; do
  set -- $P
  echo "== time $1 ${1}_$2 r$3" >> $O/time.txt
  timeout -k 5 30 python -m reorder time rmsnorm.cubin ${1}_$2.cubin --kernel $1 --launch ${1}_r$3.toml --budget 6 >> $O/time.txt 2>&1
  echo "rc=$?" >> $O/time.txt
done
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu --format=csv > $O/clocks_after_timing.csv 2>&1
