#!/bin/bash
# The tenth H200 session (2026-12-03): shard workers that draw the next shard while the one before is written and
# committed (issue 33, shards >= 1,000 samples/s with PNG, >= 2,000 with GPU JPEG), the GPU tier.
#   bash benchmarks/gpu/h200_tenth.sh tests      # the GPU tier
#   bash benchmarks/gpu/h200_tenth.sh shards     # dataset_workers.py: this tree, then .before/ (main bc3541d)
#     SH_W: worker counts (4,8,16); SH_FMT: colour variants (--gl-jpeg --nvjpeg; PNG always); SH_ENV: --env pairs
#   bash benchmarks/gpu/h200_tenth.sh shardprof  # py-spy over PNG shards (raw stacks to $OUT), PROF_W workers
#   bash benchmarks/gpu/h200_tenth.sh streamprof # py-spy over the 128x128 CUDA stream (raw stacks to $OUT)
#   bash benchmarks/gpu/h200_tenth.sh stream     # dataset_stream.py 128x128: this tree and .before/, alternating
set -u
source .gpu/boot.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
for mode in "$@"; do
case "$mode" in
tests)
  GLREC_FAKE_DRIVERS_DIR=$PWD/.fake timeout ${TIER_S:-240} python3 -m pytest -q -p no:cacheprovider -m gpu -rfE 2>&1 \
    | grep -v -e Warning -e "^  " -e "^$" | tail -${TAIL:-12} | tee "$OUT/gpu-tier.txt"
  ;;
shards)
  D="benchmarks/dataset_workers.py --shard-size 25 --rounds 1 --machine nvidia-h200 --samples ${SH_N:-6400}"
  for r in $(seq ${SH_ROUNDS:-1}); do
    python3 $D --workers ${SH_W:-4,8,16} ${SH_FMT:---gl-jpeg --nvjpeg} ${SH_ENV:-} --json "$OUT/shards-after-$r.json" \
      > "$OUT/shards-after-$r.log" 2>&1; grep -e "workers=" "$OUT/shards-after-$r.log" | grep -v "^round"
    grep -q "failed (exit" "$OUT/shards-after-$r.log" && tail -40 "$OUT/shards-after-$r.log"
    [ -n "${SH_BEFORE:-1}" ] && (cd .before && python3 $D --workers ${SH_W:-4,8,16} ${SH_FMT:---gl-jpeg --nvjpeg} \
      --json "$OUT/shards-before-$r.json" 2>&1 | grep -e "workers=" | grep -v "^round" | sed 's/^/before /')
  done
  ;;
shardprof)
  xz -dc .tools/py-spy.xz > /tmp/py-spy && chmod +x /tmp/py-spy
  for w in ${PROF_W:-8}; do
    cat > /tmp/gen.py <<PY
import time
from dataclasses import replace
from glrec.dataset import DatasetSpec, generate
spec = DatasetSpec.load("examples/dataset.toml").with_(samples=${PROF_N:-6400}, shard_size=25)
spec = spec.with_(output=replace(spec.output, rgb="${PROF_RGB:-png}", rgb_encoder="${PROF_ENC:-cpu}"))
t = time.perf_counter(); generate(spec, "/tmp/prof-out", overwrite=True, workers=$w)
print("workers=$w", round(${PROF_N:-6400} / (time.perf_counter() - t), 1), "samples/s under py-spy")
PY
    timeout 200 /tmp/py-spy record --subprocesses --threads --idle -r 100 -f raw -o "$OUT/pyspy-w$w.txt" -- python3 /tmp/gen.py 2>&1 \
      | grep -v -e "^py-spy" -e Sampling | tail -3
  done
  ;;
stream)  # the 128x128 CUDA stream (plans packed until read) and .before/, alternating; ST_BOXES: a consumer of boxes
  S="benchmarks/dataset_stream.py --device cuda --workers= --rounds 1 --tag nvidia-h200 --samples 65536 --size 128x128 --passes rgb,depth --batch-size 4096"
  for r in $(seq ${ST_ROUNDS:-2}); do
    python3 $S ${ST_BOXES:-} --name tenth-128-after-$r > "$OUT/stream-after-$r.log" 2>&1; grep median "$OUT/stream-after-$r.log"
    (cd .before && python3 $S ${ST_BOXES:-} --name tenth-128-before-$r > "$OUT/stream-before-$r.log" 2>&1)
    grep median "$OUT/stream-before-$r.log" | sed 's/^/before /' || tail -5 "$OUT/stream-before-$r.log"
  done
  tar -cf "$OUT/stream-results.tar" benchmarks/results/*tenth* .before/benchmarks/results/*tenth* 2>/dev/null
  ;;
streamprof)  # py-spy over the 128x128 CUDA stream (raw stacks to $OUT): where the parent's time goes now
  xz -dc .tools/py-spy.xz > /tmp/py-spy && chmod +x /tmp/py-spy
  cat > /tmp/stream.py <<PY
import time, torch
from dataclasses import replace
from glrec.dataset import DatasetSpec, stream
n = 4096
spec = DatasetSpec.load("examples/dataset.toml").with_(samples=n * ${PROF_BATCHES:-24}, shard_size=n, size=(128, 128))
spec = spec.with_(output=replace(spec.output, passes=("rgb", "depth")))
t = time.perf_counter(); first = None
with stream(spec, n, device="cuda") as s:
    for b in s:
        total = sum(torch.from_dlpack(b[p]).sum(dtype=torch.float64) for p in ("rgb", "depth")); float(total)
        if first is None: first = time.perf_counter()
end = time.perf_counter()
print("stream", round(spec.samples / (end - t)), "samples/s; steady", round((spec.samples - n) / (end - first)))
PY
  python3 /tmp/stream.py 2>&1 | tail -1
  timeout 200 /tmp/py-spy record --subprocesses --threads --idle -r 200 -f raw -o "$OUT/pyspy-stream.txt" -- python3 /tmp/stream.py 2>&1 \
    | grep -v -e "^py-spy" -e Sampling | tail -2
  ;;
esac
done
