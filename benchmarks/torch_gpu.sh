#!/usr/bin/env bash
# The PyTorch checks on one lent GPU in one call (#59), from the repository root:
#   OUT=<dir> bash benchmarks/torch_gpu.sh [seconds, default 520]
# One after another (nothing else computes while a part is timed), each bounded by what is left
# of the budget:
# 0. The tests that answer what the last GPU run left open ($OUT/first_tests.log): the training
#    step, fit with validation, predict, random layers, detect and Mask R-CNN's training replayed
#    as CUDA graphs (reduce-overhead; skipped without a GPU), and the four tests that failed on
#    the H200 on 2026-11-28 (their reports were lost).
# 1. bench_torch_steps.py: timm's lambda_resnet50ts in eager PyTorch, then the project's
#    LambdaResNet50TS compiled in torch.compile's default mode (reduce-overhead was measured on
#    the H200: benchmarks/results/torch_steps_h200.json); batch 64, 256 px, bfloat16; each row's
#    kernels (torch.profiler) in $OUT/profiles.tgz (one file: the device tool brings back at
#    most 8).
# 2. The rest of the compiled-step tests, and those of detect and of tensors that must not reach
#    NumPy, on the GPU ($OUT/gpu_tests.log).
#    Each failing test's report is in $OUT/failures.txt as it happens.
# 3. bench_detection.py's inference table: the converted maskrcnn_resnet50_fpn on Keras' PyTorch
#    backend (detect compiled, the default on a GPU) against torchvision's own model.
# 4. The same detection table with Keras' eager steps (LAMBDA_KERAS_TORCH_COMPILE=0).
# The device machine has no TensorFlow; Keras, namex and optree travel as wheels in .whl (see
# ../.library/device/README.md). TINY=1: tiny sizes on a CPU with the Python on PATH and its
# packages (a dry run of this script). Exits 1 if a part failed or was left out.
set -uo pipefail
out=${OUT:?set OUT to the folder for the results}
budget=${1:-520}
start=$SECONDS
left() { echo $((budget - (SECONDS - start))); }
if [ "${TINY:-0}" != 1 ] && compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
export KERAS_BACKEND=torch PYTHONUNBUFFERED=1 TF_CPP_MIN_LOG_LEVEL=2
# Each failing test's report as it happens (tests/failures_file.py): a part stopped at its
# time limit prints no summary.
export LAMBDA_KERAS_FAILURES_FILE=$out/failures.txt
log=$out/log.txt
mkdir -p "$out"
{ nvidia-smi -L 2>/dev/null; python3 -c "import keras, torch, torchvision, timm; print('keras',
keras.__version__, 'torch', torch.__version__, 'torchvision', torchvision.__version__, 'timm',
timm.__version__)"; } >"$log" 2>&1

if [ "${TINY:-0}" = 1 ]; then
  steps_args=(--batch=2 --size=32 --steps=1 --policy=float32)
  detection_args=(--repeats=1 --threads=2)
  tests_marker="not slow and not end_to_end"
else
  steps_args=(--batch=64 --size=256 --steps=10 --policy=bfloat16)
  detection_args=(--repeats=5 --threads="$(nproc)")
  tests_marker="not end_to_end"  # the slow Inductor tests too
fi

failed=0
part() {  # $1: seconds to keep for the parts after it; $2: the log; the rest: the command
  local keep=$1 log=$2; shift 2
  local seconds=$(($(left) - keep))
  if [ "$seconds" -lt 60 ]; then
    echo "left out (${seconds} s left for it): $*" >>"$out/log.txt"; failed=1; return
  fi
  timeout "$seconds" "$@" >>"$log" 2>&1
  local status=$?
  echo "exit $status after $((SECONDS - start)) s: $*" >>"$out/log.txt"
  [ "$status" -eq 0 ] || failed=1
}

# pytest in this Python without TensorFlow (not on the device machine; nothing here needs it).
tests() {  # $1: seconds to keep; $2: the log; the rest: pytest's arguments
  local keep=$1 log=$2; shift 2
  part "$keep" "$log" python3 -c "
import sys
sys.modules['tensorflow'] = None
import pytest
sys.exit(pytest.main(['-p', 'no:cacheprovider', '-q', '-p', 'no:logging', '-rs'] + sys.argv[1:]))
" "$@"
}
# First the tests that answer open questions: CUDA graphs' (skipped without a GPU) and those
# that failed on the last GPU (2026-11-28, H200); one worker per file (pytest's loadscope).
first="on_a_gpu or frozen_after_a_step or on_a_cpu_a_failing or traced_steps_compute_what_keras"
compiled_tests=(tests/backend/test_torch_compiled_step.py tests/detection/test_mask_rcnn_compiled.py)
tests 330 "$out/first_tests.log" -m "$tests_marker" -n 2 -k "$first" "${compiled_tests[@]}"
part 130 "$log" python3 benchmarks/bench_torch_steps.py "${steps_args[@]}" \
  --systems timm compiled:default --profile="$out/profiles" --output="$out/torch_steps.json"
# One file for the profiles: the device tool brings back at most 8 files.
[ -d "$out/profiles" ] && tar -czf "$out/profiles.tgz" -C "$out" profiles && rm -r "$out/profiles"
tests 60 "$out/gpu_tests.log" -m "$tests_marker" -n 3 -k "not ($first)" "${compiled_tests[@]}" \
  tests/test_device_tensors.py tests/detection/test_detect.py
part 60 "$log" env LAMBDA_KERAS_TORCH_COMPILE=auto python3 benchmarks/bench_detection.py \
  --backends=torch --tables=inference "${detection_args[@]}" --output="$out/detection.json"
part 0 "$log" env LAMBDA_KERAS_TORCH_COMPILE=0 python3 benchmarks/bench_detection.py \
  --backends=torch --tables=inference "${detection_args[@]}" --output="$out/detection_eager.json"
exit $failed
