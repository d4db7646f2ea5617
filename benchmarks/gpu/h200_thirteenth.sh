#!/bin/bash
# The thirteenth H200 session (2026-12-04): issue 33's two goals still missed, taken apart and measured again.
#   bash benchmarks/gpu/h200_thirteenth.sh diag       # the 128x128 colour + depth stream: stream_timeline.py with
#                                                     #   glrec's planning processes, 4 of them, back faces culled;
#                                                     #   dataset_stream.py with 2 / 3 / 4 planning processes
#   bash benchmarks/gpu/h200_thirteenth.sh depth      # the same with one or two batches planned ahead (DEPTH)
#   bash benchmarks/gpu/h200_thirteenth.sh final      # the stream (640x480 batch 1/64/256/1024, 128x128 twice) and
#                                                     #   16,000-sample shards (PNG, GL JPEG; ext4 and /dev/shm)
#   bash benchmarks/gpu/h200_thirteenth.sh ab         # the 640x480 stream (batch 64/256/1024), this tree against
#                                                     #   .before/ (git archive c616ab7), alternating, two rounds
#   bash benchmarks/gpu/h200_thirteenth.sh confirm    # the final tree: 128x128 twice, 640x480 batch 1,024 twice
#   bash benchmarks/gpu/h200_thirteenth.sh pool       # shards with the chunks' host memory used again, against
#                                                     #   .before/ (the tree before it), into memory; then on the disk
#   bash benchmarks/gpu/h200_thirteenth.sh shardprof  # py-spy (on-CPU samples only) over 16 workers writing GL JPEG
#                                                     #   colour shards to /dev/shm: where a sample's CPU goes
#   bash benchmarks/gpu/h200_thirteenth.sh stream     # dataset_stream.py 128x128 colour + depth, rounds alternating
#   bash benchmarks/gpu/h200_thirteenth.sh shards     # dataset_workers.py, 16 workers, long runs (ext4 and /dev/shm)
#   bash benchmarks/gpu/h200_thirteenth.sh tests      # the GPU tier (as the ninth session ran it)
# Every step has its own timeout. Results land in $OUT. Carry .gpu (and .tools for shardprof, .fake for tests).
set -u
source .gpu/boot.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
python3 -m compileall -q -j 16 glrec benchmarks /tmp/gpu-site/site > /dev/null 2>&1
quiet() { grep -v -i -e nvjpeg2k -e nvtiff -e Warning -e "^$"; }
S128="benchmarks/dataset_stream.py --device cuda --workers= --tag nvidia-h200 --samples 65536 --size 128x128 --passes rgb,depth --batch-size 4096"
shards() {  # dataset_workers.py: 16 workers (SH_W), 16,000 samples (SH_N), PNG and GL JPEG, on ext4 and in memory
  for d in ${SH_DIRS:-/tmp /dev/shm}; do
    timeout 200 python3 benchmarks/dataset_workers.py --shard-size 25 --rounds 1 --machine nvidia-h200 \
      --samples ${SH_N:-16000} --workers ${SH_W:-16} --gl-jpeg --dir $d \
      --json "$OUT/shards-${SH_N:-16000}-$(basename $d).json" > "$OUT/shards-$(basename $d).log" 2>&1
    grep -e "workers=" "$OUT/shards-$(basename $d).log" | grep -v "^round" | sed "s|^|$d |"
  done
}
for mode in "$@"; do
case "$mode" in
diag)
  T="benchmarks/gpu/stream_timeline.py --device cuda --size 128x128 --passes rgb,depth --batch 4096 --batches 8"
  for extra in "" "--plan-processes 4" "--cull"; do
    timeout 90 python3 $T $extra 2>&1 | quiet | tee -a "$OUT/timeline-128.txt" | cut -c1-150
  done
  for p in 2 3 4; do
    timeout 90 python3 $S128 --rounds 2 --gl-bound --plan-processes $p --name thirteenth-a-128-p$p 2>&1 | grep median \
      | sed "s/^/processes $p: /"
  done
  tar -cf "$OUT/diag-results.tar" benchmarks/results/*thirteenth* 2>/dev/null
  ;;
depth)  # batches planned ahead: one (as before) or two (glrec's default now), with 2 or 4 planning processes
  T="benchmarks/gpu/stream_timeline.py --device cuda --size 128x128 --passes rgb,depth --batch 4096 --batches 16"
  for extra in "--plan-depth 1" "" "--plan-processes 4"; do
    echo "== timeline $extra" >> "$OUT/timeline-depth.txt"
    timeout 90 python3 $T $extra 2>&1 | quiet >> "$OUT/timeline-depth.txt"
  done
  grep -e "^==" -e "instrumented" -e "producer" -e "waiting for planned" -e "fence wait" -e "GL busy" \
    "$OUT/timeline-depth.txt" | cut -c1-150
  for extra in "--plan-depth 1" "" "--plan-processes 4" "--plan-depth 1" ""; do
    timeout 90 python3 $S128 --rounds 1 --gl-bound $extra --name thirteenth-b-128${extra// /} 2>&1 | grep median \
      | sed "s/^/[$extra] /"
  done
  tar -cf "$OUT/depth-results.tar" benchmarks/results/*thirteenth* 2>/dev/null
  ;;
final)  # issue 33's commands on the final tree: the stream at both sizes, long shard runs, the CPU it ran on
  grep -m1 "model name" /proc/cpuinfo; echo "cores $(nproc), threads per core $(lscpu | awk -F: '/Thread\(s\) per core/ {print $2}'),"\
    "sha_ni $(grep -c -m1 sha_ni /proc/cpuinfo)"
  timeout 200 python3 benchmarks/dataset_stream.py --device cuda --workers= --rounds 1 --tag nvidia-h200 --samples 8192 \
    --batch-size 256 --batch-sizes 1,64,1024 --gl-bound --name thirteenth-c-640 > "$OUT/stream-640.log" 2>&1
  grep median "$OUT/stream-640.log"
  for r in 1 2; do
    timeout 90 python3 $S128 --rounds 2 --gl-bound --name thirteenth-c-128-$r 2>&1 | grep median | sed "s/^/run $r: /"
  done
  tar -cf "$OUT/final-results.tar" benchmarks/results/*thirteenth-c* 2>/dev/null
  shards
  ;;
ab)  # the 640x480 stream, this tree against .before/ (main c616ab7, before this session), alternating
  A="benchmarks/dataset_stream.py --device cuda --workers= --rounds 1 --tag nvidia-h200 --samples 8192 --batch-size 256"
  for r in 1 2; do
    timeout 100 python3 $A --batch-sizes 64,1024 --name thirteenth-d-640-after-$r 2>&1 | grep median | sed "s/^/after  /"
    (cd .before && timeout 100 python3 $A --batch-sizes 64,1024 --name thirteenth-d-640-before-$r 2>&1 | grep median \
      | sed "s/^/before /")
  done
  tar -cf "$OUT/ab-results.tar" benchmarks/results/*thirteenth-d* .before/benchmarks/results/*thirteenth-d* 2>/dev/null
  ;;
confirm)  # the final tree: 128x128 colour + depth twice, 640x480 batch 1024 twice (glrec's own planning rule)
  for r in 1 2; do
    timeout 90 python3 $S128 --rounds 2 --gl-bound --name thirteenth-f-128-$r 2>&1 | grep median | sed "s/^/run $r: /"
    timeout 60 python3 benchmarks/dataset_stream.py --device cuda --workers= --rounds 1 --tag nvidia-h200 --samples 8192 \
      --batch-size 1024 --gl-bound --name thirteenth-f-640-1024-$r 2>&1 | grep median | sed "s/^/run $r: 640x480 /"
  done
  tar -cf "$OUT/confirm-results.tar" benchmarks/results/*thirteenth-f* 2>/dev/null
  ;;
pool)  # 16,000 samples on 16 workers into memory: this tree against .before/ (without HostChunks), then on the disk
  W="benchmarks/dataset_workers.py --shard-size 25 --rounds 1 --machine nvidia-h200 --samples 16000 --workers 16 --gl-jpeg"
  for r in a b; do  # ABBA
    [ $r = a ] && timeout 150 python3 $W --dir /dev/shm --json "$OUT/pool-after-shm-1.json" 2>&1 | grep "workers=" \
      | grep -v "^round" | sed "s/^/after  shm /"
    (cd .before && timeout 150 python3 $W --dir /dev/shm --json "$OUT/pool-before-shm-$r.json" 2>&1 | grep "workers=" \
      | grep -v "^round" | sed "s/^/before shm /")
    [ $r = b ] && timeout 150 python3 $W --dir /dev/shm --json "$OUT/pool-after-shm-2.json" 2>&1 | grep "workers=" \
      | grep -v "^round" | sed "s/^/after  shm /"
  done
  timeout 150 python3 $W --dir /tmp --json "$OUT/pool-after-ext4.json" 2>&1 | grep "workers=" | grep -v "^round" \
    | sed "s/^/after  ext4 /"
  ;;
shardprof)  # the eleventh session's profile, of GL JPEG colour, running threads only, 50 Hz
  OUT=$OUT PROF_RGB=jpg PROF_ENC=gl PROF_N=${PROF_N:-9600} PROF_W=${PROF_W:-16} PROF_DIR=/dev/shm PROF_IDLE= PROF_HZ=50 \
    bash benchmarks/gpu/h200_eleventh.sh shardprof
  ;;
stream)
  for r in $(seq ${ST_ROUNDS:-2}); do
    timeout 90 python3 $S128 --rounds 1 --gl-bound ${ST_EXTRA:-} --name thirteenth-128-$r 2>&1 | grep median
  done
  tar -cf "$OUT/stream-results.tar" benchmarks/results/*thirteenth* 2>/dev/null
  ;;
shards)
  shards
  ;;
tests)
  OUT=$OUT bash benchmarks/gpu/h200_ninth.sh tests
  ;;
*)
  echo "unknown mode $mode"
  ;;
esac
done
