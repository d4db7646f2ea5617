# Sourced by the shard sessions' scripts (h200_fourteenth.sh to h200_nineteenth.sh): the packed extras, $OUT, the GPU
# named, the bytecode compiled once (not in each of 16 workers), $W: dataset_workers.py on 16,000 samples (SH_N) of
# examples/dataset.toml in shards of 25, 16 workers (SH_W), GL JPEG colour, into /dev/shm; run LABEL JSON [args], one
# run of it; and ab_runs [args], this tree against .before/, ABBA. A dry run of a plan on a machine without the GPU
# (llvmpipe), with a stub .gpu/boot.sh that sets PYTHONPATH=$PWD and an nvidia-smi stub on PATH: SH_N=100 SH_W=2 OUT=/tmp/out bash PLAN MODES.
set -u
source .gpu/boot.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
# Bytecode for everything a worker imports: the machine's numpy came without any, so every worker compiled numpy
# from source as it started (py-spy, fifteenth session: 0.46 s of CPU a worker, before its first sample), which an
# installed numpy does not. Compiled where it lies; where that is read-only, into a prefix the workers inherit
# (then the standard library too, as a prefix is the only place Python looks).
LIBS=$(python3 -c "import os, numpy, moderngl; print(*(os.path.dirname(m.__file__) for m in (numpy, moderngl)))")
if [ ! -w "${LIBS%% *}" ]; then
  export PYTHONPYCACHEPREFIX=/tmp/glrec-pycache
  LIBS="$LIBS $(python3 -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])')"
fi
python3 -m compileall -q -j 16 $LIBS glrec benchmarks /tmp/gpu-site/site $([ -d .before ] && echo .before) \
  > /dev/null 2>&1
W="benchmarks/dataset_workers.py --shard-size 25 --rounds 1 --machine nvidia-h200 --samples ${SH_N:-16000}"
W="$W --workers ${SH_W:-16} --gl-jpeg --dir /dev/shm"
run() {  # run LABEL JSON [extra args]: one dataset_workers.py run, its summary lines prefixed with LABEL
  local label=$1 json=$2; shift 2
  timeout ${RUN_S:-400} python3 $W --json "$OUT/$json" "$@" 2>&1 | grep -e "workers=" -e startup | grep -v "^round" \
    | sed "s/^/$label: /"
}
ab_runs() {  # this tree against .before/ (the tree a session began from), ABBA, the extra args to every run
  for r in 1 2; do
    [ $r = 1 ] && run "after " ab-after-1.json "$@"
    (cd .before && run "before" ab-before-$r.json "$@")
    [ $r = 2 ] && run "after " ab-after-2.json "$@"
  done
}
