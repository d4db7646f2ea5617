#!/usr/bin/env bash
# The GPU tier and the GPU benchmarks on the lent NVIDIA H200, in one device call (see ../shared/gpu/README.md):
#
#   bash benchmarks/gpu/h200_run.sh tier        # the GPU tier: pytest -m gpu, OpenCL, the NVENC contract, GL on NVIDIA
#   bash benchmarks/gpu/h200_run.sh record      # recordings: gpu_ceiling, processes, GL JPEG, glrec bench
#   bash benchmarks/gpu/h200_run.sh vector      # vectorised environments (benchmarks/vector_record.py --preset h200)
#   bash benchmarks/gpu/h200_run.sh dataset     # batch rendering: dataset_stream.py, dataset_workers.py
#   bash benchmarks/gpu/h200_run.sh final       # the 2026-12-02 session's last run: tests touched, datasets, ceiling, vector
#   bash benchmarks/gpu/h200_run.sh quick       # a session's short checks: the GPU tests touched, the core ceiling rows
#
# Carry .gpu (pack.sh with pillow gymnasium pyopencl hypothesis ...) and .fake (the stand-in NVENC library built
# here: tests/fake_drivers.py). Results land in $OUT; the last lines of each part are a table.
set -uo pipefail
cd "$(dirname "$0")/../.."
source .gpu/boot.sh
export GLREC_REQUIRE_GL=1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
quiet() { grep -v -i -e "nvjpeg2k" -e "nvtiff" -e "SyntaxWarning" -e "Generates a normal" -e "^$"; }
nvidia-smi --query-gpu=name,driver_version,utilization.gpu,memory.used --format=csv,noheader
for part in "$@"; do
  case $part in
    tier)
      echo "== pytest -m gpu"
      timeout 300 python3 -m pytest -m gpu -q -p no:cacheprovider 2>&1 | tee "$OUT/gpu-tier.txt" | tail -25
      echo "== the processing stage's OpenCL tests on the NVIDIA platform"
      mkdir -p /tmp/icd && echo libnvidia-opencl.so.1 > /tmp/icd/nvidia.icd
      OCL_ICD_VENDORS=/tmp/icd timeout 90 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_process_gpu.py 2>&1 | tail -3
      echo "== the NVENC contract with the real libcuda and the stand-in NVENC library"
      GLREC_FAKE_DRIVERS_DIR=$PWD/.fake timeout 120 python3 -m pytest -q -p no:cacheprovider -m gpu \
        tests/encoders/test_nvenc_contract.py tests/encoders/test_nvenc_contract_devices.py 2>&1 | tail -3
      echo "== GL-tier tests on NVIDIA GL (GL JPEG, batches, turns, JPEG quality)"
      timeout 240 python3 -m pytest -q -p no:cacheprovider tests/encoders tests/batch tests/pipeline/test_turns.py \
        -k "gl_jpeg or batch or turns or quality" 2>&1 | tail -4
      echo "== glrec doctor"; timeout 60 python3 -m glrec doctor 2>&1 | quiet | tail -20
      ;;
    record)
      echo "== gpu_ceiling (1920x1080 plasma)"
      timeout 420 python3 benchmarks/gpu_ceiling.py --frames 600 --json "$OUT/gpu_ceiling.json" --only \
        gl:shared,nvjpeg:b1,nvjpeg:gl-turns32,pipe:recorder,pipe:recorder-worker,pipe:recorder-chunk32,pipe:recorder-turns-nomux,pipe:recorder-gl,procs:1x-recorder,procs:2x-recorder,procs:4x-recorder,procs:8x-recorder,procs:1x-recorder-gl,procs:2x-recorder-gl,procs:4x-recorder-gl,procs:8x-recorder-gl \
        2>&1 | quiet | tail -30
      echo "== gpu_ceiling (1280x720 plasma)"
      timeout 120 python3 benchmarks/gpu_ceiling.py --frames 600 --size 1280x720 --json "$OUT/gpu_ceiling_720.json" \
        --only gl:shared,nvjpeg:b1,pipe:recorder,pipe:recorder-gl 2>&1 | quiet | tail -8
      echo "== GL JPEG before/after"
      timeout 240 python3 benchmarks/gl_jpeg.py --sizes 1920x1080,1280x720 --scenes plasma,cube --frames 300 \
        --repeat 1 --json "$OUT/gl_jpeg.json" 2>&1 | quiet | tail -14
      ;;
    bench)
      echo "== glrec bench"
      timeout 420 python3 -m glrec bench --backends cpu-cuda,nvjpeg,gl --sizes 1920x1080 --scenes plasma,cube \
        --frames 600 --repeat 1 --json "$OUT/bench.json" 2>&1 | quiet | tail -30
      ;;
    vector)
      echo "== vectorised environments"
      timeout 420 python3 benchmarks/vector_record.py --preset h200 \
        --rows gl-jpeg-files,nvjpeg-files,grid-nvjpeg,cpu-h264,x264-alone --json "$OUT/vector_record.json" 2>&1 | quiet | tail -14
      ;;
    quick)
      echo "== GPU tests of the batch routes, datasets and NVENC copies (the real libcuda, the stand-in NVENC)"
      GLREC_FAKE_DRIVERS_DIR=$PWD/.fake timeout 240 python3 -m pytest -q -p no:cacheprovider -m gpu --tb=short \
        tests/gpu/test_batch_gpu.py tests/gpu/test_dataset_stream_gpu.py tests/encoders/test_nvenc_batch_contract.py \
        2>&1 | tee "$OUT/gpu-quick.txt" | tail -15
      timeout 120 python3 -m pytest -q -p no:cacheprovider --tb=short tests/batch/test_batch_recorder.py -k sigkill \
        2>&1 | tail -4
      echo "== gpu_ceiling core rows (1920x1080 plasma)"
      timeout 200 python3 benchmarks/gpu_ceiling.py --frames 600 --json "$OUT/gpu_ceiling.json" --only \
        gl:shared,nvjpeg:b1,nvjpeg:gl-turns32,pipe:recorder,pipe:recorder-gl,procs:1x-recorder,procs:4x-recorder,procs:4x-recorder-gl \
        2>&1 | quiet | tail -14
      ;;
    final)
      echo "== GPU tests touched this session (batch routes, dataset stream/colour/layers, per-env NVENC copies, SIGKILL)"
      GLREC_FAKE_DRIVERS_DIR=$PWD/.fake timeout 140 python3 -m pytest -q -p no:cacheprovider -m "gpu or gl" --tb=short \
        tests/gpu/test_batch_gpu.py tests/gpu/test_dataset_stream_gpu.py tests/gpu/test_dataset_colour_gpu.py \
        tests/dataset/test_dataset_layers.py tests/encoders/test_nvenc_batch_contract.py \
        2>&1 | tee "$OUT/gpu-final.txt" | tail -12
      timeout 40 python3 -m pytest -q -p no:cacheprovider --tb=short tests/batch/test_batch_recorder.py -k sigkill \
        2>&1 | tail -3
      echo "== dataset stream, CUDA consumer: 640x480 five passes; 128x128 rgb+depth"
      timeout 90 python3 benchmarks/dataset_stream.py --samples 1024 --size 640x480 --batch-size 64 \
        --batch-sizes 1,256,1024 --before --gl-bound --device cuda --workers "" --rounds 1 --tag nvidia-h200 \
        --name dataset-stream-640x480-cuda 2>&1 | quiet | tail -12
      timeout 60 python3 benchmarks/dataset_stream.py --samples 16384 --size 128x128 --passes rgb,depth \
        --batch-size 1024 --batch-sizes 4096 --gl-bound --device cuda --workers "" --rounds 1 --tag nvidia-h200 \
        --name dataset-stream-128x128-rgb-depth-cuda 2>&1 | quiet | tail -8
      cp benchmarks/results/*nvidia-h200_dataset-stream* "$OUT/" 2>/dev/null
      echo "== dataset workers (PNG before/after, GPU JPEG)"
      timeout 140 python3 benchmarks/dataset_workers.py --workers 1,16 --samples 800 --shard-size 25 --rounds 1 \
        --png-before --nvjpeg --gl-jpeg --startup --machine "NVIDIA H200, 16 cores" \
        --json "$OUT/dataset-workers.json" 2>&1 | quiet | tail -14
      echo "== gpu_ceiling core rows (1920x1080 plasma)"
      timeout 70 python3 benchmarks/gpu_ceiling.py --frames 600 --json "$OUT/gpu_ceiling.json" --only \
        gl:shared,nvjpeg:b1,nvjpeg:gl-turns32,pipe:recorder,pipe:recorder-gl,procs:4x-recorder,procs:4x-recorder-gl \
        2>&1 | quiet | tail -12
      echo "== vectorised environments (64 x 256x256 torch CUDA)"
      timeout 50 python3 benchmarks/vector_record.py --preset h200 --steps 600 \
        --rows gl-jpeg-files,nvjpeg-files,grid-nvjpeg --json "$OUT/vector_record.json" 2>&1 | quiet | tail -8
      ;;
    vector-long)
      timeout 420 python3 benchmarks/vector_record.py --preset h200 --rows gl-jpeg-long --long "${LONG:-20000}" \
        --json "$OUT/vector_record_long.json" 2>&1 | quiet | tail -6
      ;;
  esac
done
