#!/usr/bin/env bash
# The packages the suite imports that a GPU machine's own Python lacks, as CPython 3.12 manylinux wheels in .whl/,
# for a machine without network (tools/device_campaign.py installs them beside its preinstalled torch; which ones
# and why: docs/device.md, "Wheels"; the remote layer's moto and flask stay behind, its cases skip there, saying
# so). Any Python with pip makes them (PY=..., default the project's .venv where there is one, else python3).
# Idempotent; refuses (exit 2) two versions of one package, a folder over 60 MiB, and a travelling tree over 64 MiB
# (the checkout's tracked and unignored files plus the folder).
#   Usage: bash tools/device_wheels.sh [FOLDER]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-.whl}
die() { echo "error: $*" >&2; exit 2; }
if [ -z "${PY:-}" ]; then
  if [ -x .venv/bin/python ]; then PY=.venv/bin/python; else PY=$(command -v python3 || true); fi
fi
if [ -z "$PY" ] || ! "$PY" -m pip --version >/dev/null 2>&1; then
  die "no Python with pip to download the wheels (${PY:-python3 not found}); set PY=/path/to/python"
fi
wanted=("memory-profiler==0.61.0" "torchdata==0.11.0" "ruptures==1.1.10" "pytest-benchmark==5.3.1"
        "py-cpuinfo2==10.1.1")
pin() {  # NAME FILE: adds NAME at the version FILE pins, or exits 2 naming both
  local version
  version=$(sed -n "s/^$1==//p" "$2" 2>/dev/null || true)
  [ -n "$version" ] || die "$2 pins no version of $1 (the wheels travel at the project's pinned versions)"
  wanted+=("$1==$version")
}
pin simplejpeg constraints.txt
# The peers that can travel (the peers step; SPDL needs FFmpeg's libraries and DALI's wheel is 199 MB: they stay
# behind and skip, saying so), at constraints-peers.txt's versions, with what they import that the machine lacks.
for peer in grain webdataset litdata; do pin "$peer" constraints-peers.txt; done
wanted+=("absl-py==2.5.1" "array-record==0.8.6" "cloudpickle==3.1.3" "etils==1.15.0" "importlib-resources==7.1.0"
         "zipp==4.1.2" "portpicker==1.6.0" "protobuf==7.36.2" "braceexpand==0.1.7" "pyyaml==6.0.4"
         "lightning-utilities==0.15.3" "boto3==1.44.8" "botocore==1.44.8" "s3transfer==0.19.3" "jmespath==1.1.0"
         "urllib3==2.8.0" "requests==2.34.2" "idna==3.20" "charset-normalizer==3.5.3" "certifi==2026.10.19.post1")
cp312=(--only-binary=:all: --python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64
       --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64
       --platform manylinux2014_x86_64 --platform manylinux1_x86_64)  # what pip takes for the device's Python
mkdir -p "$out"
"$PY" -m pip download --quiet --no-deps "${cp312[@]}" -d "$out" "${wanted[@]}"
ls -1 "$out"
twice=$(ls -1 "$out" | grep '\.whl$' | cut -d- -f1 | tr 'A-Z-' 'a-z_' | sort | uniq -d)
[ -z "$twice" ] || die "$out holds two versions of: $twice; remove the old ones (the device's install stops on them)"
kib=$(du -sk "$out" | cut -f1)
echo "$out: $(ls -1 "$out" | wc -l) wheels, $((kib / 1024)) MiB"
[ "$kib" -le $((60 * 1024)) ] || die "$out holds more than 60 MiB; a device command carries 64 MiB at most"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  tree=$(git ls-files -z --cached --others --exclude-standard | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
  total=$(( (tree + kib * 1024) / 1024 / 1024 ))
  echo "travelling to the device: the tree $((tree / 1024 / 1024)) MiB + $out $((kib / 1024)) MiB = $total MiB of 64"
  [ "$total" -lt 64 ] || die "the tree and $out come to $total MiB; a device command carries 64 MiB at most"
fi
# The install a device runs, tried here with pip's resolver for CPython 3.12: every wheel must be installable.
target=$(mktemp -d)
trap 'rm -rf "$target"' EXIT
"$PY" -m pip install --quiet --dry-run --no-index --no-deps "${cp312[@]}" --target "$target" "$out"/*.whl
echo "installable on CPython 3.12 x86_64 from $out alone (--no-index --no-deps)"
