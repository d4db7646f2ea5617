#!/usr/bin/env bash
# Installs what the test suite uses, on a fresh Debian/Ubuntu machine (as root), then glrec itself with
# its test extras. The README's test command is `bash tests/setup.sh && python -m pytest`; CI runs it too.
set -euo pipefail
cd "$(dirname "$0")/.."

# Mesa EGL/GL for the headless context; ffmpeg for ffprobe (independent checks in tests) and as the
# UDP/RTSP/RTMP receiver in the streaming tests; chromium as the browser viewer in the streaming tests;
# gcc and NVIDIA's NVENC header (libffmpeg-nvenc-dev) build the NVENC contract test's stand-in driver libraries;
# PoCL as the OpenCL platform (a CPU) the processing stage's OpenCL tests run on; OSMesa for MuJoCo's
# MUJOCO_GL=osmesa (glrec.gym's fallback from the MuJoCo fast path).
pkgs=(libegl1 libegl-mesa0 libgl1-mesa-dri libgles2 ffmpeg chromium gcc libffmpeg-nvenc-dev pocl-opencl-icd libosmesa6)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

python3 -m pip install -q --upgrade pip >/dev/null 2>&1 || true
# The processing stage's tests use real PyTorch (the CPU build 2.13.0+cpu where the package index offers it)
# and pyopencl (its wheel bundles the ICD loader).
python3 -m pip install -q "torch==2.13.0" "pyopencl>=2022.1" >/dev/null
# Other GL libraries in the same process (tests/test_with_*.py): MuJoCo (+ Gymnasium's HalfCheetah),
# pyrender + trimesh, raw PyOpenGL. pyrender pins PyOpenGL 3.1.0, whose EGL module lacks what
# MuJoCo's EGL backend needs (EGLDeviceEXT); pyrender itself works with the newer one.
python3 -m pip install -q ".[interop]"
python3 -m pip install -q --no-deps --upgrade "PyOpenGL>=3.1.7" 2>&1 | { grep -v "dependency resolver\|pyrender .* requires PyOpenGL" || true; }
python3 -m pip install -q ".[test,ray,nvenc]"
