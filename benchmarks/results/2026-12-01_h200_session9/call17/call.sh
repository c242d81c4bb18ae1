# Call 17 (ninth session, nvidia-h200, ~360 s): `reorder optimize` on Triton's feed-forward PTX with the GPU
# scoring every trial: the search's own path to the wgmma move (PTX kinds as Optuna parameters, ptxas,
# SASS families), the winner re-checked at two more launches (K = 64: one iteration; 128 x 512 x 4096).
# carry [".whl", "gpu_code", "gpu_build/pack.tgz"] (pack.tgz: opt_ffn)
. gpu_code/calls/head.sh
O=$B/opt_ffn
stamp "optimize start"
timeout 420 python -m reorder optimize $O/ffn.ptx --launch $O/ffn.toml --check-launch $O/k64.json --check-launch $O/m128k4096.json --assume-noalias --budget 8 --time 150s --device gpu -o $R/optimize/ffn_fast.cubin > $R/optimize.log 2>&1
stamp "optimize rc=$?"
tail -5 $R/optimize.log
sed -n 1,40p $R/optimize/ffn_fast.reorder/report.md
finish call17
