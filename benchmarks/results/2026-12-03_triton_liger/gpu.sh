#!/bin/bash
# Liger-Kernel through the one line: run from the tree's root on the GPU machine.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>&1 | tail -2
export PYTHONPATH=/tmp/site:$PWD LIGER_SRC=$PWD/.gpu/liger/src
export TRITON_CACHE_DIR=/tmp/tc REORDER_CACHE=/tmp/rc
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv > $OUT/nvidia_smi.csv
timeout -k 10 ${LIMIT:-500} python3 benchmarks/results/2026-12-03_triton_liger/gpu_run.py $OUT/run "$@" 2>&1 | tee $OUT/log.txt | grep -v "^\[" | cut -c1-600
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> $OUT/nvidia_smi.csv
grep "^\[" $OUT/log.txt | tail -5
