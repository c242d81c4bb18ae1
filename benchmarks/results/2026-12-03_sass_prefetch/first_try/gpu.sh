#!/bin/bash
set -u
O=${OUT:-.}
K=rmsnorm_triton_style
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu --format=csv > $O/clocks_before.csv 2>&1
for C in pf pfp; do for R in 1 16 256 1024; do
  echo "== check ${K}_$C r$R" >> $O/check.txt
  timeout -k 5 25 python -m reorder check rmsnorm.cubin ${K}_$C.cubin --kernel $K --launch ${K}_r$R.toml --sets 3 >> $O/check.txt 2>&1; echo "rc=$?" >> $O/check.txt
done; done
for P in "pf 1" "pfp 1" "blocks 1" "peel 1" "pf 16" "pfp 16" "pf 1024" "blocks 1024"; do
  set -- $P
  echo "== time ${K}_$1 r$2" >> $O/time.txt
  timeout -k 5 30 python -m reorder time rmsnorm.cubin ${K}_$1.cubin --kernel $K --launch ${K}_r$2.toml --budget 6 >> $O/time.txt 2>&1; echo "rc=$?" >> $O/time.txt
done
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu --format=csv > $O/clocks_after.csv 2>&1
