#!/bin/bash
# The seventh H200 session (2026-12-03): issue 32's open goals (nvJPEG stage vs library, processes), the GPU tier.
#   bash benchmarks/gpu/h200_seventh.sh tests    # the GPU tier
#   bash benchmarks/gpu/h200_seventh.sh stage    # nvjpeg_stage_probe.py + glrec bench's nvJPEG rows
#   bash benchmarks/gpu/h200_seventh.sh procs    # N processes: Recorder, Recorder in a GPU lock, CUDA only, GL only
#   bash benchmarks/gpu/h200_seventh.sh stream   # the training stream, dataset_stream.py both sizes
set -u
source .gpu/boot.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
quiet() { grep -v -e nvjpeg2k -e nvtiff -e Warning; }
F=${FRAMES:-3000}
for mode in "$@"; do
case "$mode" in
tests)
  GLREC_FAKE_DRIVERS_DIR=$PWD/.fake timeout ${TIER_S:-240} python3 -m pytest -q -p no:cacheprovider -m gpu -rfE 2>&1 \
    | grep -v -e Warning -e "^  " -e "^$" | tail -${TAIL:-12} | tee "$OUT/gpu-tier.txt"
  ;;
stage)  # .before/ holds main 85d40d8's glrec (with this tree's gpu_ceiling.py): before and after in one run
  python3 benchmarks/nvjpeg_stage_probe.py --frames 2000 2>&1 | quiet | tee "$OUT/nvjpeg-stage-probe.txt" | tail -14
  for round in 1 2; do
    python3 benchmarks/gpu_ceiling.py --frames $F --json "$OUT/gpu-ceiling-after-$round.json" --only \
      gl:shared,nvjpeg:b1,pipe:recorder 2>&1 | quiet | grep -e "^gl:" -e "^nvjpeg" -e "^pipe" -e Recorder
    (cd .before && python3 benchmarks/gpu_ceiling.py --frames $F --json "$OUT/gpu-ceiling-before-$round.json" --only \
      pipe:recorder 2>&1 | quiet | grep -e "^pipe")
  done
  B="bench --backends nvjpeg --baselines none --sizes 1920x1080 --scenes plasma,cube --frames $F --repeat 2 --no-plot"
  python3 -m glrec $B --json "$OUT/bench-nvjpeg-after.json" 2>&1 | quiet | grep -e "stage:encode" -e "glrec:nvjpeg" -e "^efficiency"
  (cd .before && python3 -m glrec $B --json "$OUT/bench-nvjpeg-before.json" 2>&1 | quiet | grep -e "stage:encode" -e "glrec:nvjpeg" \
    -e "^efficiency")
  ;;
procs)
  for kind in ${KINDS:-recorder recorder-gpulock nvjpeg gl recorder-gl}; do
    only=$(for n in ${PROCS:-1 2 4}; do printf "procs:%sx-%s," $n $kind; done)
    python3 benchmarks/gpu_ceiling.py --frames $F --json "$OUT/procs-$kind.json" --only "${only%,}" 2>&1 | quiet \
      | grep -e "^procs" -e Error | head -8
  done
  ;;
mps)  # CUDA's Multi-Process Service, where the machine lets it start: CUDA-only processes in one shared context
  if command -v nvidia-cuda-mps-control >/dev/null; then
    export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
    mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
    if timeout 20 nvidia-cuda-mps-control -d; then
      python3 benchmarks/gpu_ceiling.py --frames $F --json "$OUT/procs-mps.json" --only \
        procs:1x-nvjpeg,procs:2x-nvjpeg,procs:2x-recorder 2>&1 | quiet | grep -e "^procs" -e Error | head -6
      echo quit | timeout 20 nvidia-cuda-mps-control
    else
      echo "MPS: the control daemon did not start"; tail -3 /tmp/mps-log/control.log 2>/dev/null
    fi
  else
    echo "MPS: nvidia-cuda-mps-control is not on this machine"
  fi
  ;;
final)  # the GPU tier on the final tree, doctor's sharing line, and turns of 32 against 64 frames in one process
  GLREC_FAKE_DRIVERS_DIR=$PWD/.fake timeout 240 python3 -m pytest -q -p no:cacheprovider -m gpu -rfE 2>&1 \
    | grep -v -e Warning -e "^  " -e "^$" | tail -4 | tee "$OUT/gpu-tier-final.txt"
  python3 -m glrec doctor 2>&1 | grep -i -e sharing -e nvjpeg -e "^CUDA" | tee "$OUT/doctor.txt"
  for round in 1 2 3; do
    python3 benchmarks/gpu_ceiling.py --frames $F --json "$OUT/turns-$round.json" --only \
      pipe:recorder,pipe:recorder-b64-phased 2>&1 | quiet | grep -e "^pipe"
  done
  ;;
stream)
  S="benchmarks/dataset_stream.py --device cuda --workers= --rounds ${ROUNDS:-2} --tag nvidia-h200"
  python3 $S --samples 8192 --batch-size 256 --gl-bound --name seventh-640x480 2>&1 | grep median
  python3 $S --samples 65536 --size 128x128 --passes rgb,depth --batch-size 4096 --gl-bound \
    --name seventh-128x128 2>&1 | grep median
  tar -cf "$OUT/stream-results.tar" benchmarks/results/*seventh* 2>/dev/null
  ;;
esac
done
