#!/usr/bin/env bash
# Integration test of `lmrt serve`: tests/server/run.sh [BUILD_DIR] (default build): the API
# (server_test.py), hostile clients (hostile_test.py), /metrics and /health readiness
# (metrics_test.py), continuous batching (batching_test.py), then a load and soak run (soak_test.py).
# Needs python3, and node + npm for the openai client check (it installs `openai` into a temporary
# folder from the npm registry; pass --skip-npm to leave that out).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="${1:-build}"
[[ "$build" = /* ]] || build="$root/$build"
shift || true
model="${LMRT_SHARED_DIR:-$root/../shared}/models/TinyStories-656K-Q8_0.gguf"
binary="$build/examples/cli/lmrt"
if ! "$binary" serve --help >/dev/null 2>&1; then
  echo "tests/server: $binary has no HTTP server (install libmicrohttpd-dev nlohmann-json3-dev)" >&2
  exit 1
fi
timeout 600 python3 "$here/server_test.py" "$binary" "$model" "$@"
timeout 300 python3 "$here/hostile_test.py" "$binary" "$model"
timeout 120 python3 "$here/metrics_test.py" "$binary" "$model"
timeout 300 python3 "$here/batching_test.py" "$binary" "$model"
# The soak run: LMRT_SOAK_SECONDS (default 30) of mixed traffic, then leak and health checks.
exec timeout 300 python3 "$here/soak_test.py" "$binary" "$model"
