#!/bin/bash
# The eleventh H200 session (2026-12-03): what bounds shard workers (issue 33: >= 1,000 samples/s with PNG, >= 2,000
# with GPU JPEG): the disk the shards are synced to, against the same runs on memory (/dev/shm).
#   bash benchmarks/gpu/h200_eleventh.sh disk       # the filesystems: df, disk_bound.py on /tmp and /dev/shm
#   bash benchmarks/gpu/h200_eleventh.sh shards     # dataset_workers.py --disk-bound on each of SH_DIRS
#     SH_W: worker counts (8,16); SH_FMT: colour variants (--gl-jpeg); SH_ENV: --env pairs; SH_N: samples (3200);
#     then the same in .before/ (a copy of the tree before, its commit in .before/COMMIT) unless SH_BEFORE=
#   bash benchmarks/gpu/h200_eleventh.sh shardprof  # py-spy over PNG shards written to PROF_DIR (/dev/shm)
#   bash benchmarks/gpu/h200_eleventh.sh tests|stream|streamprof   # as the tenth session's script runs them
# Every mode first compiles the trees' and the packages' sources, as an installed package has them: a fresh copy
# has no bytecode, and 16 workers compiling at once was 15 % of their GL threads in the tenth session's profile.
set -u
source .gpu/boot.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
python3 -m compileall -q -j 16 glrec benchmarks /tmp/gpu-site/site $( [ -d .before/glrec ] && echo .before/glrec ) > /dev/null 2>&1
for mode in "$@"; do
case "$mode" in
tests|stream|streamprof)
  OUT=$OUT bash benchmarks/gpu/h200_tenth.sh "$mode"
  ;;
disk)
  df -hT /tmp /dev/shm | tee "$OUT/disk-df.txt"
  for d in /tmp /dev/shm; do
    python3 benchmarks/disk_bound.py --dir $d --writers ${DISK_WRITERS:-16} --file-mb 33 --total-gb ${DISK_GB:-4} \
      | tee -a "$OUT/disk-bound.jsonl"
  done
  ;;
shards)
  D="benchmarks/dataset_workers.py --shard-size 25 --rounds ${SH_ROUNDS:-1} --machine nvidia-h200 --samples ${SH_N:-3200} ${SH_BOUND---disk-bound}"
  for d in ${SH_DIRS:-/tmp /dev/shm}; do
    tag=$(echo $d | tr -d / )
    python3 $D --dir $d --workers ${SH_W:-8,16} ${SH_FMT:---gl-jpeg} ${SH_ENV:-} --json "$OUT/shards-$tag.json" \
      > "$OUT/shards-$tag.log" 2>&1
    grep -e "workers=" -e "disk bound" -e "samples of" "$OUT/shards-$tag.log" | grep -v "^round"
    grep -q "failed (exit" "$OUT/shards-$tag.log" && tail -40 "$OUT/shards-$tag.log"
    [ -n "${SH_BEFORE:-1}" ] && [ -d .before ] && (cd .before && python3 $D --dir $d --workers ${SH_W:-8,16} \
      ${SH_FMT:---gl-jpeg} --json "$OUT/shards-$tag-before-$(cat COMMIT).json" 2>&1 \
      | grep -e "workers=" -e "disk bound" | grep -v "^round" | sed 's/^/before /')
  done
  ;;
shardprof)  # py-spy over PNG shards in PROF_DIR, PROF_W workers (raw stacks to $OUT; PROF_IDLE= : CPU only)
  xz -dc .tools/py-spy.xz > /tmp/py-spy && chmod +x /tmp/py-spy
  cat > /tmp/gen.py <<PY
import time
from dataclasses import replace
from glrec.dataset import DatasetSpec, generate
spec = DatasetSpec.load("examples/dataset.toml").with_(samples=${PROF_N:-3200}, shard_size=25)
spec = spec.with_(output=replace(spec.output, rgb="${PROF_RGB:-png}", rgb_encoder="${PROF_ENC:-cpu}"))
t = time.perf_counter(); generate(spec, "${PROF_DIR:-/dev/shm}/prof-out", overwrite=True, workers=${PROF_W:-16})
print("workers=${PROF_W:-16}", round(${PROF_N:-3200} / (time.perf_counter() - t), 1), "samples/s under py-spy")
PY
  timeout 200 /tmp/py-spy record --subprocesses --threads ${PROF_IDLE---idle} -r ${PROF_HZ:-100} -f raw -o "$OUT/pyspy.txt" \
    -- python3 /tmp/gen.py 2>&1 \
    | grep -v -e "^py-spy" -e Sampling | tail -3
  rm -rf "${PROF_DIR:-/dev/shm}/prof-out"
  ;;
esac
done
