#!/usr/bin/env bash
# One device call: the one line against the plain autotuner over the Triton benchmark's own
# families (every shape), from the CPU's build. Run from the tree's root with
# .gpu/pack_bench.tgz and .whl/ carried.
set -u
Q="name,clocks.current.sm,clocks.current.memory,temperature.gpu,power.draw"
nvidia-smi --query-gpu=$Q --format=csv > $OUT/nvidia_smi.csv
rm -rf /tmp/triton-oneline-src && mkdir -p /tmp/triton-oneline-src && cp -r . /tmp/triton-oneline-src/
cd /tmp/triton-oneline-src
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD PYTHONDONTWRITEBYTECODE=
mkdir -p gpu_build && tar xzf .gpu/pack_bench.tgz -C gpu_build
timeout -k 10 470 python3 -m benchmarks.triton_one_line run --build gpu_build --out $OUT/bench --set bench \
    --deadline 420 > $OUT/gpu_log.txt 2>&1
echo "run rc=$?" >> $OUT/gpu_log.txt
nvidia-smi --query-gpu=$Q --format=csv,noheader >> $OUT/nvidia_smi.csv
