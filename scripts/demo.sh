#!/usr/bin/env bash
# Builds lmrt (Release) and streams a story from the default model.
# Model: $LMRT_MODEL, else ../shared/models/TinyStories-656K-Q8_0.gguf beside this checkout.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLMRT_BUILD_TESTS=OFF >/dev/null
cmake --build "$root/build" --target lmrt_cli
model=${LMRT_MODEL:-$root/../shared/models/TinyStories-656K-Q8_0.gguf}
exec "$root/build/examples/cli/lmrt" run -m "$model" -p "${LMRT_PROMPT:-Once upon a time}" -n "${LMRT_TOKENS:-200}"
