#!/bin/bash
# Device run: the stall cut alone against the original, and the prefetch build against the stall cut alone (paired, L2 warm).
set -u
O=${OUT:-.}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu --format=csv > $O/clocks_before.csv 2>&1
for P in "rmsnorm_triton_style 1" "rms_norm_f32 1" "rms_norm_f32 16"; do
  set -- $P
  echo "== time ${1}_stalls vs rmsnorm r$2" >> $O/time.txt
  timeout -k 5 30 python -m reorder time rmsnorm.cubin ${1}_stalls.cubin --kernel $1 --launch ${1}_r$2.toml --budget 6 >> $O/time.txt 2>&1; echo "rc=$?" >> $O/time.txt
  echo "== time ${1}_prefetch vs ${1}_stalls r$2" >> $O/time.txt
  timeout -k 5 30 python -m reorder time ${1}_stalls.cubin ${1}_prefetch.cubin --kernel $1 --launch ${1}_r$2.toml --budget 6 >> $O/time.txt 2>&1; echo "rc=$?" >> $O/time.txt
done
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu --format=csv > $O/clocks_after.csv 2>&1
