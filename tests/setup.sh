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

# Into the python3 on PATH: the virtual environment of the README's first command where it is active,
# else the system's (CI's image, whose Python is not externally managed). Where the system refuses
# (Debian 12, Ubuntu >= 23.04: PEP 668), say what to do instead of pip's page of text.
if ! python3 -c 'import os, sys, sysconfig; sys.exit(sys.prefix == sys.base_prefix and os.path.exists(
    os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")))'; then
  echo "tests/setup.sh: $(command -v python3) is managed by the system; activate a virtual environment first" \
    "(python3 -m venv .venv && . .venv/bin/activate, as the README's first command does)." >&2
  exit 1
fi
python3 -m pip install -q --upgrade pip >/dev/null 2>&1 || true
# The processing stage's tests use real PyTorch (the CPU build 2.13.0+cpu where the package index offers it)
# and pyopencl (its wheel bundles the ICD loader).
python3 -m pip install -q "torch==2.13.0" "pyopencl>=2022.1" >/dev/null
# docs: MkDocs, Material and mkdocstrings, for the site's build (.ci/run, tests/test_docs.py)
python3 -m pip install -q ".[test,ray,nvenc,docs]"
# Other GL libraries in the same process (tests/gl/test_with_*.py): MuJoCo (+ Gymnasium's HalfCheetah),
# pyrender + trimesh, raw PyOpenGL (the interop extra). pyrender pins PyOpenGL 3.1.0, whose EGL module
# lacks what MuJoCo's EGL backend needs (EGLDeviceEXT); pyrender itself works with the newer one. So
# pyrender's other requirements and the newer PyOpenGL go in first, and pyrender last, without its pins:
# no pip run meets the pin, so none prints a resolver conflict (an ERROR: line) after installing.
python3 -m pip install -q "mujoco>=3.1" "gymnasium[mujoco]>=1.0" "trimesh>=4" "PyOpenGL>=3.1.7" \
  freetype-py imageio networkx pillow "pyglet>=1.4.10" scipy six
python3 -m pip install -q --no-deps "pyrender>=0.1.45"
