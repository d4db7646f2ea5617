#!/bin/bash
# The eighth H200 session (2026-12-03): issue 33's shards (start-up against the steady rate, where a worker's
# time goes), the stream with a detection consumer, the GPU tier.
#   bash benchmarks/gpu/h200_eighth.sh tests      # the GPU tier
#   bash benchmarks/gpu/h200_eighth.sh shards     # dataset_workers.py: 800 samples (the issue's), then 6,400
#   bash benchmarks/gpu/h200_eighth.sh readback   # layer_pack.READBACK get/copy/direct, polled fences
#     (run b also had GLREC_BENCH_GL_TURNS=1, the workers' GPU turns of commit 87fce3b, since removed)
#   bash benchmarks/gpu/h200_eighth.sh planproc   # the stream's batches planned in a process against threads
#   bash benchmarks/gpu/h200_eighth.sh final      # GPU tier, then shards before (.before/) and after
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
  for env in ${ENVS:-GLREC_BENCH_FENCE_POLL=0.0005 __GL_YIELD=USLEEP}; do
    python3 $D --workers ${TURNS_W:-8,16} --readback ${TURNS_RB:-copy} --env $env \
      --json "$OUT/env-${env%%=*}.json" 2>&1 | grep -e "workers=" | grep -v "^round" | grep "$env"
  done
  ;;
planproc)  # the 128x128 stream with batches planned in a process (PROCESS_BATCH 1024) or on threads only, alternating
  S="benchmarks/dataset_stream.py --device cuda --workers= --rounds 1 --tag nvidia-h200 --samples 65536 --size 128x128 --passes rgb,depth --batch-size 4096"
  for r in $(seq ${PP_ROUNDS:-2}); do
    python3 $S --plan-process-batch 1024 --name eighth-planproc-$r 2>&1 | grep median
    python3 $S --plan-process-batch none --name eighth-planthreads-$r 2>&1 | grep median
  done
  S6="benchmarks/dataset_stream.py --device cuda --workers= --rounds 1 --tag nvidia-h200 --samples 8192 --batch-size 256"
  [ -n "${PP_640:-1}" ] && python3 $S6 --plan-process-batch 256 --gl-bound --name eighth-640-planproc 2>&1 | grep median
  [ -n "${PP_640:-1}" ] && python3 $S6 --plan-process-batch none --name eighth-640-planthreads 2>&1 | grep median
  tar -cf "$OUT/planproc-results.tar" benchmarks/results/*eighth-*plan* 2>/dev/null
  ;;
final)  # the GPU tier on the final tree; shards before (.before/, main 85d40d8) and after, the issue's 800 and 6,400
  GLREC_FAKE_DRIVERS_DIR=$PWD/.fake timeout ${TIER_S:-240} python3 -m pytest -q -p no:cacheprovider -m gpu -rfE 2>&1 \
    | grep -v -e Warning -e "^  " -e "^$" | tail -${TAIL:-6} | tee "$OUT/gpu-tier-final.txt"
  for n in ${FINAL_N:-800 6400}; do
    D="benchmarks/dataset_workers.py --shard-size 25 --rounds 1 --machine nvidia-h200 --samples $n --workers ${FINAL_W:-1,8,16}"
    python3 $D ${FINAL_JPEG:---gl-jpeg} --json "$OUT/final-after-$n.json" 2>&1 | grep -e "workers=" | grep -v "^round"
    (cd .before && python3 $D ${FINAL_JPEG:---gl-jpeg} --json "$OUT/final-before-$n.json" 2>&1 | grep -e "workers=" \
      | grep -v "^round" | sed 's/^/before /')
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
