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
tests|streamprof)  # as the ninth session ran them (streamprof: py-spy over the 128x128 CUDA stream, then gl-bound)
  OUT=$OUT bash benchmarks/gpu/h200_ninth.sh "$mode"
  ;;
shardprof)  # the ninth session's, over PNG shards by default: 8 workers, 6,400 samples
  OUT=$OUT PROF_RGB=${PROF_RGB:-png} PROF_ENC=${PROF_ENC:-cpu} PROF_W=${PROF_W:-8} PROF_N=${PROF_N:-6400} \
    bash benchmarks/gpu/h200_ninth.sh shardprof
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
stream)  # the 128x128 CUDA stream (plans packed until read) and .before/, alternating; ST_BOXES: a consumer of boxes
  S="benchmarks/dataset_stream.py --device cuda --workers= --rounds 1 --tag nvidia-h200 --samples 65536 --size 128x128 --passes rgb,depth --batch-size 4096"
  for r in $(seq ${ST_ROUNDS:-2}); do
    python3 $S ${ST_BOXES:-} --name tenth-128-after-$r > "$OUT/stream-after-$r.log" 2>&1; grep median "$OUT/stream-after-$r.log"
    (cd .before && python3 $S ${ST_BOXES:-} --name tenth-128-before-$r > "$OUT/stream-before-$r.log" 2>&1)
    grep median "$OUT/stream-before-$r.log" | sed 's/^/before /' || tail -5 "$OUT/stream-before-$r.log"
  done
  tar -cf "$OUT/stream-results.tar" benchmarks/results/*tenth* .before/benchmarks/results/*tenth* 2>/dev/null
  ;;
esac
done
