#!/usr/bin/env bash
# Installs the Debian packages lmrt builds and tests with, when any is missing.
# As root it runs apt-get; otherwise it prints the command to run.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libxsimd-dev libsqlite3-dev libgtest-dev libbenchmark-dev
  libpcre2-dev                          # byte-level BPE pre-tokenizer regexes
  libmicrohttpd-dev nlohmann-json3-dev  # examples/server
  abigail-tools                          # scripts/check-abi.sh
  golang-go python3                      # examples/go, tests/server
  clang libclang-rt-14-dev               # scripts/fuzz.sh (libFuzzer)
  python3-jinja2                         # tests/chat: the reference renderer of chat templates
  python3-jsonschema                     # tests/grammar: every constrained output validated against its schema
  python3-numpy                          # tests/bench: make_synth.py writes the benchmark models
)
# The AArch64 cross test (scripts/cross-test-aarch64.sh) installs its own packages: it must first add
# the arm64 architecture to dpkg, which this script leaves alone.
# node/npm (tests/server's OpenAI client check) and cargo (examples/rust) come with the machine
# image; install node from Debian when it is missing.
command -v npm >/dev/null 2>&1 || packages+=(nodejs npm)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "lmrt: installing missing packages: ${missing[*]}" >&2
if [ "$(id -u)" -eq 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
  sudo apt-get update -qq
  sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "lmrt: please install them first: sudo apt-get install ${missing[*]}" >&2
  exit 1
fi
