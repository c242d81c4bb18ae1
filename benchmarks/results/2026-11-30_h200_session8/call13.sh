# Call 13 (eighth session, nvidia-h200, ~150 s): the GPU test tier after the independent scheduler and the read-back.
# carry [".whl", "gpu_code"]
. gpu_code/calls/head.sh
timeout 420 python -m pytest -v -m gpu tests/gpu -p no:cacheprovider > $R/gpu_tests.txt 2>&1; echo "rc=$?" >> $R/gpu_tests.txt
tail -25 $R/gpu_tests.txt
finish call13
