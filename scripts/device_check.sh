#!/usr/bin/env bash
# Lesson 10 on a real GPU, in one call of the device machine (issue 34). On an H100 with 16
# cores (2026-11-27) the default steps add up to about 7 minutes, a machine's start not counted.
# Run from the repository root:
#
#     bash scripts/device_check.sh                # the default steps
#     bash scripts/device_check.sh bench claims10 # only the named steps (env always runs)
#
# Steps: env (wheels into /tmp/site, versions), bench (python -m mlpar.bench gpu, 25 s),
# claims10 (lesson 10's claims alone, 20 s), gpu (pytest -m gpu with numba-cuda, then with
# numba's built-in CUDA target, 46 s), nb10 (lesson 10 under strict nbval against the committed
# outputs, 33 s), suite (every test and notebook under strict nbval on 16 processes, 272 s:
# `make test` without ruff, which the image lacks). Not by default: claims (python -m
# mlpar.bench claims, every lesson's).
#
# The device image (see the device README) has python3 3.12 with numpy 2.5, which breaks
# numba-cuda (np.row_stack), and lacks dask, ipywidgets, nbval and Jupyter's kernel. Those come
# as wheels in .whl/ (ignored by git, passed with carry: [".whl"]); scripts/device_wheels.txt
# lists them and the pip download command that fetches them on a machine with the network.
# Results go to $OUT (at most 8 files come back): summary.txt first, then one log per step.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/device_out}
mkdir -p "$OUT"
STEPS=${*:-"bench claims10 gpu nb10 suite"}
SUMMARY="$OUT/summary.txt"
PY=${PYTHON:-python3}
: >"$SUMMARY"
say() { echo "$*" | tee -a "$SUMMARY"; }

# ---- env: carried wheels first on the path, the repository importable as mlpar --------------
if ls .whl/*.whl >/dev/null 2>&1; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl >"$OUT/env.log" 2>&1 || { say "wheel install FAILED"; tail -20 "$OUT/env.log"; }
else
  say "no .whl/ carried: the image's own packages are used (numpy 2.5 breaks numba-cuda)"
fi
export PYTHONPATH="/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1 MPLBACKEND=Agg
unset NUMBA_ENABLE_CUDASIM
# numba-cuda takes over `numba.cuda` through a path hook that its .pth file installs in the
# image's site-packages. The "without numba-cuda" runs remove that hook before numba is
# imported, in every process, through a sitecustomize on the path.
mkdir -p /tmp/no_numba_cuda
cat >/tmp/no_numba_cuda/sitecustomize.py <<'EOF'
import sys
sys.meta_path[:] = [f for f in sys.meta_path
                    if "numba_cuda" not in (getattr(type(f), "__module__", "") or "")]
EOF

{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1
  nproc
  "$PY" - <<'EOF'
import importlib.metadata as md, sys
print("python", sys.version.split()[0])
for name in ("numpy", "numba", "numba-cuda", "llvmlite", "cupy-cuda13x", "torch", "scipy",
             "scikit-learn", "dask", "distributed", "pytest", "nbval", "ipykernel"):
    try:
        print(f"{name} {md.version(name)}")
    except md.PackageNotFoundError:
        print(f"{name} absent")
from mlpar.gpu import backend
print("backend", backend.choose_cuda_backend())
from mlpar.gpu import stack, cuda_kernels as ck
print(stack.current())
print(backend.device_info())
from numba import cuda
print("numba.cuda from", cuda.__file__)
try:
    from numba.cuda.cudadrv import driver, runtime
    print("CUDA runtime", runtime.runtime.get_version(), "driver", driver.driver.get_version())
except Exception as err:  # the simulator, or a numba-cuda that moved them
    print("CUDA versions: n/a", type(err).__name__, err)
EOF
} >>"$SUMMARY" 2>&1
cat "$SUMMARY"

run_step() {  # name, time limit in seconds, command...
  local name=$1 limit=$2; shift 2
  local start=$SECONDS
  timeout "$limit" "$@" >"$OUT/$name.log" 2>&1
  local status=$?
  say "step $name: exit $status in $((SECONDS - start)) s (limit $limit s) -> $name.log"
  tail -5 "$OUT/$name.log" | sed 's/^/    /' | tee -a "$SUMMARY"
}

for step in $STEPS; do
  case $step in
    bench)  run_step bench 120 "$PY" -m mlpar.bench gpu --json "$OUT/bench_gpu.json" ;;
    claims) run_step claims 200 "$PY" -m mlpar.bench claims ;;
    claims10) run_step claims10 90 "$PY" -c "from mlpar.claims import all_claims
for f in all_claims():
    if f.__module__.endswith('l10_gpu'):
        print(repr(f(False)))" ;;
    gpu)
      run_step gpu 150 bash -c "\"$PY\" -m pytest -q -p no:cacheprovider -m gpu tests/gpu -rs \
        && echo '--- without numba-cuda (numba built-in CUDA target) ---' \
        && PYTHONPATH=/tmp/no_numba_cuda:\$PYTHONPATH \"$PY\" -c 'import numba.cuda as c; print(c.__file__)' \
        && PYTHONPATH=/tmp/no_numba_cuda:\$PYTHONPATH \"$PY\" -m pytest -q -p no:cacheprovider -m gpu tests/gpu -rs" ;;
    nb10)   run_step nb10 120 "$PY" -m pytest -q -p no:cacheprovider notebooks/10_gpu.ipynb ;;
    suite)  run_step suite 280 "$PY" -m pytest -v -rfE -p no:cacheprovider -n 16 --dist loadfile --durations=25 ;;
    *)      say "unknown step $step" ;;
  esac
done
say "done at $(date -u +%H:%M:%S), $SECONDS s in all"
