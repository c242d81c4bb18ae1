# sourced at the start of each device call (from the repository root, which is the frozen commit's tree)
set -u
R=/tmp/res; mkdir -p $R
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 3
B=$PWD/gpu_build
[ -f $B/pack.tgz ] && tar xzf $B/pack.tgz -C $B  # the builds, packed to fit the carry limit
export PYTHONPATH=/tmp/site:$PWD REORDER_COMMIT=$(cat gpu_code/COMMIT) PYTHONUNBUFFERED=1
stamp() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
finish() {
  nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv > $R/nvidia_smi.csv 2>&1
  tar czf $OUT/$1.tgz -C $R . ; cp $R/lane*.log $OUT/ 2>/dev/null; ls -la $OUT
}
