#!/bin/bash
# The eighth H200 session (2026-12-03): issue 33's shards (start-up against the steady rate, where a worker's
# time goes), the stream with a detection consumer, the GPU tier.
#   bash benchmarks/gpu/h200_eighth.sh tests      # the GPU tier
#   bash benchmarks/gpu/h200_eighth.sh shards     # dataset_workers.py: 800 samples (the issue's), then 6,400
#   bash benchmarks/gpu/h200_eighth.sh readback   # layer_pack.READBACK get/copy/direct, runner.GL_TURNS on/off
#   bash benchmarks/gpu/h200_eighth.sh shardprof  # py-spy over a 1-worker and an 8-worker run (raw stacks to $OUT)
#   bash benchmarks/gpu/h200_eighth.sh boxes      # dataset_stream.py --with-boxes, this tree and .before/ alternating
set -u
source .gpu/boot.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
W=${WORKERS:-1,8,16}
for mode in "$@"; do
case "$mode" in
tests)
  GLREC_FAKE_DRIVERS_DIR=$PWD/.fake timeout ${TIER_S:-240} python3 -m pytest -q -p no:cacheprovider -m gpu -rfE 2>&1 \
    | grep -v -e Warning -e "^  " -e "^$" | tail -${TAIL:-12} | tee "$OUT/gpu-tier.txt"
  ;;
shards)
  D="benchmarks/dataset_workers.py --shard-size 25 --rounds 1 --machine nvidia-h200"
  python3 $D --workers $W --samples 800 --startup ${JPEG:---nvjpeg --gl-jpeg} --json "$OUT/workers-800.json" 2>&1 \
    | grep -e "workers=" -e startup | grep -v "^round"
  python3 $D --workers ${BIG_W:-8,16} --samples ${BIG:-6400} ${BIG_JPEG:---gl-jpeg} --json "$OUT/workers-big.json" 2>&1 \
    | grep -e "workers=" | grep -v "^round"
  ;;
readback)  # how packed passes reach the host, and whether the workers take turns on the GPU (3,200 samples)
  D="benchmarks/dataset_workers.py --shard-size 25 --rounds 1 --machine nvidia-h200 --samples ${RB_N:-3200}"
  python3 $D --workers ${RB_W:-1,8,16} --readback ${RB:-get,copy,direct} --json "$OUT/readback.json" 2>&1 \
    | grep -e "workers=" | grep -v "^round"
  for env in GLREC_BENCH_GL_TURNS=1 GLREC_BENCH_FENCE_POLL=0.0005 __GL_YIELD=USLEEP; do
    python3 $D --workers ${TURNS_W:-8,16} --readback ${TURNS_RB:-copy} --env $env \
      --json "$OUT/env-${env%%=*}.json" 2>&1 | grep -e "workers=" | grep -v "^round" | grep "$env"
  done
  ;;
shardprof)
  xz -dc .tools/py-spy.xz > /tmp/py-spy && chmod +x /tmp/py-spy
  for w in ${PROF_W:-1 8}; do
    cat > /tmp/gen.py <<PY
import sys, time
from glrec.dataset import DatasetSpec, generate
spec = DatasetSpec.load("examples/dataset.toml").with_(samples=${PROF_N:-3200}, shard_size=25)
t = time.perf_counter(); generate(spec, "/tmp/prof-out", overwrite=True, workers=$w)
print("workers=$w", round(${PROF_N:-3200} / (time.perf_counter() - t), 1), "samples/s under py-spy")
PY
    timeout 240 /tmp/py-spy record --subprocesses --threads --idle -r 100 -f raw -o "$OUT/pyspy-w$w.txt" -- python3 /tmp/gen.py 2>&1 \
      | grep -v -e "^py-spy" -e Sampling | tail -3
  done
  ;;
boxes)
  S="benchmarks/dataset_stream.py --device cuda --workers= --rounds 1 --tag nvidia-h200 --samples 65536 --size 128x128 --passes rgb,depth --batch-size 4096"
  for r in 1 2; do
    python3 $S --with-boxes --name eighth-boxes-after-$r 2>&1 | grep median
    (cd .before && python3 $S --with-boxes --name eighth-boxes-before-$r 2>&1 | grep median)
  done
  tar -cf "$OUT/stream-results.tar" benchmarks/results/*eighth* .before/benchmarks/results/*eighth* 2>/dev/null
  ;;
esac
done
