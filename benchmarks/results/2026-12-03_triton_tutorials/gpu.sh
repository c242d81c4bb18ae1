#!/bin/bash
# Triton GPU tests, then Triton's tutorials through the one line: run from the tree's root on the GPU machine.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>&1 | tail -2
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv > $OUT/nvidia_smi.csv
timeout -k 10 150 python3 -m pytest -q -m gpu tests/gpu/test_triton_gpu.py -p no:cacheprovider -rf > $OUT/gpu_tests.txt 2>&1
tail -4 $OUT/gpu_tests.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> $OUT/nvidia_smi.csv
export TUTORIALS_SRC=$PWD/.gpu/tutorials/src TRITON_CACHE_DIR=/tmp/tc REORDER_CACHE=/tmp/rc
timeout -k 10 ${LIMIT:-380} python3 benchmarks/results/2026-12-03_triton_tutorials/gpu_run.py $OUT/run "$@" > $OUT/log.txt 2>&1
grep "^{" $OUT/log.txt | cut -c1-300
grep -v "^\[" $OUT/log.txt | grep -v "^{" | grep -v "identical\|same binary" | tail -20
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> $OUT/nvidia_smi.csv
