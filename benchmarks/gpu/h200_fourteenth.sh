#!/bin/bash
# The fourteenth H200 session (2026-12-04): what the shards' last missed goal (GPU JPEG colour >= 2,000 samples/s)
# costs, taken apart by leaving costs out (dataset_workers.py's GLREC_BENCH_WHAT_IF; not glrec's behaviour).
#   bash benchmarks/gpu/h200_fourteenth.sh whatif   # 16,000 samples on 16 workers into /dev/shm, PNG and GL JPEG:
#                                                   #   as glrec writes them, then without the SHA-256 digests,
#                                                   #   without the lossless files, with the PNGs stored
#   bash benchmarks/gpu/h200_fourteenth.sh ab       # the same shards, this tree against .before/, alternating
#   bash benchmarks/gpu/h200_fourteenth.sh ext4     # this tree's shards on the machine's disk (/tmp, ext4)
#   bash benchmarks/gpu/h200_fourteenth.sh compile  # the GL JPEG encoder's start in 1 and 16 processes at once,
#                                                   #   the shader cache cold and warm (gl_jpeg_compile_probe.py)
#   bash benchmarks/gpu/h200_fourteenth.sh tests    # the GPU tier (as the ninth session ran it)
# Every step has its own timeout. Results land in $OUT. Carry .gpu (and .fake for tests, .before for ab).
source benchmarks/gpu/shards_prelude.sh
for mode in "$@"; do
case "$mode" in
whatif)
  for what in ${WHAT:-no-digests no-files,no-digests stored-png no-files}; do
    timeout ${WI_S:-240} python3 $W --env GLREC_BENCH_WHAT_IF=$what --json "$OUT/whatif-${what//,/+}.json" 2>&1 \
      | grep "workers=" | grep -v "^round" | sed "s/^/$what: /"
  done
  ;;
ab)
  for r in 1 2; do  # ABBA
    [ $r = 1 ] && timeout 150 python3 $W --json "$OUT/ab-after-1.json" 2>&1 | grep "workers=" | grep -v "^round" \
      | sed "s/^/after  /"
    (cd .before && timeout 150 python3 $W --json "$OUT/ab-before-$r.json" 2>&1 | grep "workers=" \
      | grep -v "^round" | sed "s/^/before /")
    [ $r = 2 ] && timeout 150 python3 $W --json "$OUT/ab-after-2.json" 2>&1 | grep "workers=" | grep -v "^round" \
      | sed "s/^/after  /"
  done
  ;;
ext4)
  timeout 150 python3 ${W/\/dev\/shm/\/tmp} --json "$OUT/ext4-after.json" 2>&1 | grep "workers=" | grep -v "^round" \
    | sed "s/^/after ext4 /"
  ;;
compile)
  timeout 300 python3 benchmarks/gpu/gl_jpeg_compile_probe.py --procs 1,16 --json "$OUT/gl-jpeg-compile.json"
  ;;
tests)
  OUT=$OUT bash benchmarks/gpu/h200_ninth.sh tests
  ;;
*)
  echo "unknown mode $mode"
  ;;
esac
done
