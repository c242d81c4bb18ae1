#!/bin/bash
# Device run: byte checks at 1-1024 rows, then paired timings (L2 warm). Run from this folder; results under $OUT.
set -u
O=${OUT:-.}
K=rmsnorm_triton_style
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu --format=csv > $O/clocks_before.csv 2>&1
for C in prefetch blocks_prefetch; do for R in 1 16 256 1024; do
  echo "== check ${K}_$C r$R" >> $O/check.txt
  timeout -k 5 25 python -m reorder check rmsnorm.cubin ${K}_$C.cubin --kernel $K --launch ${K}_r$R.toml --sets 5 >> $O/check.txt 2>&1; echo "rc=$?" >> $O/check.txt
done; done
for P in "blocks_prefetch 1" "prefetch 1" "blocks 1" "blocks_prefetch 16" "prefetch 16" "blocks_prefetch 256" "blocks_prefetch 1024" "prefetch 1024"; do
  set -- $P
  echo "== time ${K}_$1 r$2" >> $O/time.txt
  timeout -k 5 30 python -m reorder time rmsnorm.cubin ${K}_$1.cubin --kernel $K --launch ${K}_r$2.toml --budget 6 >> $O/time.txt 2>&1; echo "rc=$?" >> $O/time.txt
done
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu --format=csv > $O/clocks_after.csv 2>&1
