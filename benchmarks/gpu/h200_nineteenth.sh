#!/bin/bash
# The nineteenth H200 session's plan (2026-12-05): what a GPU JPEG shard worker's first 1 s is made of.
#   bash benchmarks/gpu/h200_nineteenth.sh egl     # egl_start_probe.py: a GL context from glrec in 1 and 16 fresh
#                                                  #   processes at once, per step, this tree against .before/ (ABBA)
#   bash benchmarks/gpu/h200_nineteenth.sh ab      # 16,000 samples, 16 workers, GL JPEG: this tree against .before/
#   bash benchmarks/gpu/h200_nineteenth.sh counts  # the same on 16, 12 and 8 workers (two rounds, ABBA)
#   bash benchmarks/gpu/h200_nineteenth.sh prof    # py-spy (on-CPU samples) over the 16 workers
#   bash benchmarks/gpu/h200_nineteenth.sh mapped  # mapped_read_probe.py: the host reading a persistent mapping
#   bash benchmarks/gpu/h200_nineteenth.sh malloc  # 16 workers as is and with glibc's malloc told never to give
#                                                  #   memory back (faults a sample, CPU), two rounds
#   bash benchmarks/gpu/h200_nineteenth.sh rowfilter # 16 workers as is and with the PNG rows' filter left out
#                                                  #   (GLREC_BENCH_WHAT_IF=no-row-filter): what filtering on the GPU
#                                                  #   could save, two rounds
#   bash benchmarks/gpu/h200_nineteenth.sh scanlines # 16 workers, the PNG passes' rows filtered on the GPU (as
#                                                  #   shipped) against on the host (GLREC_BENCH_SCANLINES=host),
#                                                  #   two rounds ABBA; then the scanline tests on this GPU
#   bash benchmarks/gpu/h200_nineteenth.sh tests   # the GPU tier
# Carry .gpu (.tools for prof, .fake for tests, .before for egl and ab: the tree this session began from).
# Results land in $OUT.
source benchmarks/gpu/shards_prelude.sh
for mode in "$@"; do
case "$mode" in
egl) timeout 300 python3 benchmarks/gpu/egl_start_probe.py --procs 1,16 --rounds 2 --trees .,.before \
       --json "$OUT/egl-start.json" ;;
ab) ab_runs --no-png ;;
counts) run "counts" counts.json --no-png --rounds 2 --workers 16,12,8 ;;
prof) OUT=$OUT PROF_RGB=jpg PROF_ENC=gl PROF_N=${PROF_N:-16000} PROF_W=${PROF_W:-16} PROF_DIR=/dev/shm PROF_IDLE= \
        PROF_HZ=50 bash benchmarks/gpu/h200_eleventh.sh shardprof
      python3 benchmarks/gpu/pyspy_summary.py "$OUT/pyspy.txt" --top 40 > "$OUT/pyspy-summary.txt" 2>&1
      head -60 "$OUT/pyspy-summary.txt" ;;
mapped) timeout 120 python3 benchmarks/gpu/mapped_read_probe.py --repeat 20 --json "$OUT/mapped-read.json" ;;
malloc) run "malloc" malloc.json --no-png --rounds 2 --env MALLOC_MMAP_THRESHOLD_=33554432 \
          --env MALLOC_TRIM_THRESHOLD_=1073741824 ;;
rowfilter) run "rowfilter" rowfilter.json --no-png --rounds 2 --env GLREC_BENCH_WHAT_IF=no-row-filter ;;
scanlines) run "scanlines" scanlines.json --no-png --rounds 2 --env GLREC_BENCH_SCANLINES=host
  timeout 120 python3 -m pytest -q -p no:cacheprovider tests/dataset/test_dataset_scanlines.py 2>&1 | tail -2 \
    | tee "$OUT/scanline-tests.txt" ;;
tests) OUT=$OUT bash benchmarks/gpu/h200_ninth.sh tests ;;
*) echo "unknown mode $mode" ;;
esac
done
