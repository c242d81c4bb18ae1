#!/bin/bash
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>&1 | tail -2
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv > $OUT/nvidia_smi.csv
timeout -k 10 260 python3 -m pytest -q -m gpu tests/gpu -p no:cacheprovider -rf > $OUT/gpu_tests.txt 2>&1
tail -4 $OUT/gpu_tests.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> $OUT/nvidia_smi.csv
export LIGER_SRC=$PWD/.gpu/liger/src TRITON_CACHE_DIR=/tmp/tc REORDER_CACHE=/tmp/rc
timeout -k 10 300 python3 benchmarks/results/2026-12-03_triton_liger/gpu_run.py $OUT/run > $OUT/log.txt 2>&1
grep "^{" $OUT/log.txt | cut -c1-200
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> $OUT/nvidia_smi.csv
