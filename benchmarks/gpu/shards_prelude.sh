# Sourced by the shard sessions' scripts (h200_fourteenth.sh, h200_fifteenth.sh): the packed extras, $OUT, the GPU
# named, the bytecode compiled once (not in each of 16 workers), and $W: dataset_workers.py on 16,000 samples
# (SH_N) of examples/dataset.toml in shards of 25, 16 workers, GL JPEG colour, into /dev/shm.
set -u
source .gpu/boot.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
python3 -m compileall -q -j 16 glrec benchmarks /tmp/gpu-site/site > /dev/null 2>&1
W="benchmarks/dataset_workers.py --shard-size 25 --rounds 1 --machine nvidia-h200 --samples ${SH_N:-16000}"
W="$W --workers 16 --gl-jpeg --dir /dev/shm"
