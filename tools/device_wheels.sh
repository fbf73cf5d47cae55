#!/usr/bin/env bash
# The packages the suite imports that a GPU machine's own Python lacks, as CPython 3.12 manylinux wheels in .whl/,
# for a machine without network: it installs them beside its preinstalled torch with
#
#   python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
#
# The list is what `pytest benchmarks` imports beyond such a machine's torch, torchvision, numpy, scipy, matplotlib,
# psutil, tqdm, pytest and pytest-benchmark: simplejpeg (decode pipelines), memory-profiler (memory timelines),
# torchdata (the thread-map group) and ruptures (change points), at the versions this project's constraints pin.
# The remote layer's moto, boto3 and flask stay behind: its cases skip there, saying so. Idempotent; refuses a
# folder over 60 MiB. Usage: bash tools/device_wheels.sh [FOLDER] (default .whl).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-.whl}
PY=${PY:-.venv/bin/python}
pin() { sed -n "s/^$1==//p" constraints.txt; }
wanted=("simplejpeg==$(pin simplejpeg)" "memory-profiler==0.61.0" "torchdata==0.11.0" "ruptures==1.1.10")
platforms=()
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_24_x86_64 manylinux_2_17_x86_64 \
         manylinux2014_x86_64 manylinux1_x86_64; do
  platforms+=(--platform "$p")
done
mkdir -p "$out"
$PY -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  "${platforms[@]}" -d "$out" "${wanted[@]}"
kib=$(du -sk "$out" | cut -f1)
ls -1 "$out"
echo "$out: $(ls -1 "$out" | wc -l) wheels, $((kib / 1024)) MiB"
if [ "$kib" -gt $((60 * 1024)) ]; then
  echo "error: $out holds more than 60 MiB; a device command carries 64 MiB at most" >&2
  exit 2
fi
# The install a device runs, tried here with pip's resolver for CPython 3.12: every wheel must be installable.
$PY -m pip install --quiet --dry-run --no-index --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp "${platforms[@]}" --target "$(mktemp -d)" "$out"/*.whl
echo "installable on CPython 3.12 x86_64 from $out alone (--no-index --no-deps)"
