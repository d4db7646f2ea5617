#!/bin/bash
# The ninth H200 session (2026-12-03): turns of 64 frames as the recordings' default (issue 32), where the
# 128x128 stream's render thread spends its time (issue 33), shards with GPU JPEG colour, the GPU tier.
#   bash benchmarks/gpu/h200_ninth.sh tests      # the GPU tier
#   bash benchmarks/gpu/h200_ninth.sh turns      # pipe:recorder (now turns of 64) against turns of 32, alternating
#   bash benchmarks/gpu/h200_ninth.sh streamprof # py-spy over the 128x128 CUDA stream (raw stacks to $OUT), gl-bound
#   bash benchmarks/gpu/h200_ninth.sh jpegshards # dataset_workers.py, GL JPEG and nvJPEG colour, 6,400 samples
#     (run 1: main 2c1ff62 alone; later runs: this tree and .before/ = main 2c1ff62)
#   bash benchmarks/gpu/h200_ninth.sh yield      # __GL_YIELD=USLEEP in the shard workers beside the default
#   bash benchmarks/gpu/h200_ninth.sh threads    # GLREC_BENCH_MIN_THREADS=2 (two encode threads a worker) beside the default
#   bash benchmarks/gpu/h200_ninth.sh shardprof  # py-spy over GL JPEG colour shards, 1 and 16 workers
#   bash benchmarks/gpu/h200_ninth.sh stream     # dataset_stream.py 128x128, this tree (and --with-boxes) and .before/
set -u
source .gpu/boot.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
quiet() { grep -v -e nvjpeg2k -e nvtiff -e Warning; }
for mode in "$@"; do
case "$mode" in
tests)
  GLREC_FAKE_DRIVERS_DIR=$PWD/.fake timeout ${TIER_S:-240} python3 -m pytest -q -p no:cacheprovider -m gpu -rfE 2>&1 \
    | grep -v -e Warning -e "^  " -e "^$" | tail -${TAIL:-12} | tee "$OUT/gpu-tier.txt"
  ;;
turns)
  for r in $(seq ${TURN_ROUNDS:-3}); do
    python3 benchmarks/gpu_ceiling.py --frames ${FRAMES:-3000} --json "$OUT/turns-$r.json" --only \
      ${TURN_ONLY:-gl:shared,nvjpeg:b1,pipe:recorder,pipe:recorder-b32-phased} 2>&1 | quiet | grep -e "^gl:" -e "^nvjpeg" -e "^pipe"
  done
  ;;
streamprof)
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
  S="benchmarks/dataset_stream.py --device cuda --workers= --rounds 1 --tag nvidia-h200 --samples 65536 --size 128x128 --passes rgb,depth --batch-size 4096"
  python3 $S --gl-bound --name ninth-128-glbound 2>&1 | grep median
  ;;
jpegshards)
  D="benchmarks/dataset_workers.py --shard-size 25 --rounds 1 --machine nvidia-h200 --samples ${BIG:-6400}"
  for r in $(seq ${JS_ROUNDS:-1}); do
    python3 $D --workers ${BIG_W:-8,16} ${BIG_JPEG:---gl-jpeg --nvjpeg} --json "$OUT/jpeg-shards-after-$r.json" 2>&1 \
      | grep -e "workers=" | grep -v "^round"
    [ -n "${JS_BEFORE:-1}" ] && (cd .before && python3 $D --workers ${BIG_W:-8,16} ${BIG_JPEG:---gl-jpeg --nvjpeg} \
      --json "$OUT/jpeg-shards-before-$r.json" 2>&1 | grep -e "workers=" | grep -v "^round" | sed 's/^/before /')
  done
  ;;
yield)  # the NVIDIA driver sleeping instead of spinning while a worker waits for the GPU, beside the default
  D="benchmarks/dataset_workers.py --shard-size 25 --rounds 1 --machine nvidia-h200 --samples ${Y_N:-6400}"
  python3 $D --workers ${Y_W:-16} ${Y_JPEG:---gl-jpeg} --env __GL_YIELD=USLEEP --json "$OUT/yield.json" 2>&1 \
    | grep -e "workers=" | grep -v "^round"
  ;;
threads)  # every worker given two encode threads (16 workers on 16 cores have one each), beside the default
  D="benchmarks/dataset_workers.py --shard-size 25 --rounds 1 --machine nvidia-h200 --samples ${T_N:-6400}"
  tag=$(echo "${T_ENV:-}" | tr -c 'A-Za-z0-9_\n' '-' | tr -s '-')
  python3 $D --workers ${T_W:-16} ${T_JPEG:---gl-jpeg} --env GLREC_BENCH_MIN_THREADS=2 ${T_ENV:-} \
    --json "$OUT/threads${tag:+-$tag}.json" 2>&1 | grep -e "workers=" | grep -v "^round"
  ;;
shardprof)  # py-spy over GL JPEG colour shards, 1 and 16 workers (raw stacks to $OUT)
  xz -dc .tools/py-spy.xz > /tmp/py-spy && chmod +x /tmp/py-spy
  for w in ${PROF_W:-1 16}; do
    cat > /tmp/gen.py <<PY
import time
from dataclasses import replace
from glrec.dataset import DatasetSpec, generate
spec = DatasetSpec.load("examples/dataset.toml").with_(samples=${PROF_N:-3200}, shard_size=25)
spec = spec.with_(output=replace(spec.output, rgb="${PROF_RGB:-jpg}", rgb_encoder="${PROF_ENC:-gl}"))
t = time.perf_counter(); generate(spec, "/tmp/prof-out", overwrite=True, workers=$w)
print("workers=$w", round(${PROF_N:-3200} / (time.perf_counter() - t), 1), "samples/s under py-spy")
PY
    timeout 200 /tmp/py-spy record --subprocesses --threads --idle -r 100 -f raw -o "$OUT/pyspy-w$w.txt" -- python3 /tmp/gen.py 2>&1 \
      | grep -v -e "^py-spy" -e Sampling | tail -3
  done
  ;;
stream)
  S="benchmarks/dataset_stream.py --device cuda --workers= --rounds 1 --tag nvidia-h200 --samples 65536 --size 128x128 --passes rgb,depth --batch-size 4096"
  for r in $(seq ${ST_ROUNDS:-2}); do
    python3 $S ${ST_BOXES:---with-boxes} --name ninth-128-after-$r 2>&1 | grep median
    (cd .before && python3 $S --name ninth-128-before-$r 2>&1 | grep median | sed 's/^/before /')
    S6="benchmarks/dataset_stream.py --device cuda --workers= --rounds 1 --tag nvidia-h200 --samples 8192 --batch-size 256"
    [ -n "${ST_640:-1}" ] && python3 $S6 --name ninth-640-after-$r 2>&1 | grep median
    [ -n "${ST_640:-1}" ] && (cd .before && python3 $S6 --name ninth-640-before-$r 2>&1 | grep median | sed 's/^/before /')
  done
  tar -cf "$OUT/stream-results.tar" benchmarks/results/*ninth* .before/benchmarks/results/*ninth* 2>/dev/null
  ;;
esac
done
