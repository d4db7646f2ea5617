#!/bin/bash
# The fifteenth H200 session (2026-12-04): the GPU JPEG shards' last 2,000 samples/s, after BLAKE3.
#   bash benchmarks/gpu/h200_fifteenth.sh compile   # GL JPEG start, shader cache cold and warm, 1 and 16 processes
#   bash benchmarks/gpu/h200_fifteenth.sh asis      # 16,000 samples, 16 workers, /dev/shm, GL JPEG, with --startup;
#                                                   #   then without digests, then as is again (one call: comparable)
#   bash benchmarks/gpu/h200_fifteenth.sh shardprof # py-spy over 16 GL JPEG workers (on-CPU samples, 50 Hz)
#   bash benchmarks/gpu/h200_fifteenth.sh counts    # GL JPEG on 16, 20, 24 workers, with 1 and 2 encode threads each
#   bash benchmarks/gpu/h200_fifteenth.sh ab        # this tree against .before/, alternating (ABBA)
#   bash benchmarks/gpu/h200_fifteenth.sh tests     # the GPU tier (as the ninth session ran it)
# Carry .gpu (and .tools for shardprof, .fake for tests, .before for ab). Results land in $OUT.
source benchmarks/gpu/shards_prelude.sh
for mode in "$@"; do
case "$mode" in
compile) timeout 300 python3 benchmarks/gpu/gl_jpeg_compile_probe.py --procs 1,16 --json "$OUT/gl-jpeg-compile.json" ;;
asis)
  run "as is" asis-1.json --startup
  run "no digests" whatif-no-digests.json --env GLREC_BENCH_WHAT_IF=no-digests
  run "as is" asis-2.json
  ;;
shardprof)
  OUT=$OUT PROF_RGB=jpg PROF_ENC=gl PROF_N=${PROF_N:-9600} PROF_W=${PROF_W:-16} PROF_DIR=/dev/shm PROF_IDLE= PROF_HZ=50 \
    bash benchmarks/gpu/h200_eleventh.sh shardprof
  python3 benchmarks/gpu/pyspy_summary.py "$OUT/pyspy.txt" --top 40 > "$OUT/pyspy-summary.txt" 2>&1
  ;;
counts)  # GL JPEG only: 16, 20 and 24 workers, one encode thread each and two (drawing the next chunk meanwhile)
  timeout 100 python3 ${W/--samples ${SH_N:-16000}/--samples 1600} --no-png --json /tmp/warm.json > /dev/null 2>&1
  timeout 400 python3 ${W/--workers 16/--workers 16,20,24} --no-png --env GLREC_BENCH_MIN_THREADS=2 \
    --json "$OUT/counts.json" 2>&1 | grep "workers=" | grep -v "^round"
  ;;
ab) ab_runs ;;
tests) OUT=$OUT bash benchmarks/gpu/h200_ninth.sh tests ;;
*) echo "unknown mode $mode" ;;
esac
done
