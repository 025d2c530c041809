#!/usr/bin/env bash
# Installs lmrt into a temporary prefix, then builds the four example programs OUT OF TREE (copied
# to a temporary directory) against that installed tree only, runs each on the same greedy
# prompt, and checks that they print exactly what `lmrt run` prints. Also runs the Rust and Go
# wrappers' own tests (layout checks included).
#   scripts/test-examples.sh [BUILD_DIR]     (default: build/, already built)
# Needs cc, cmake, pkg-config, cargo and go (Debian golang-go); installs pkg-config and
# golang-go with apt-get when missing and running as root.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
shared=${LMRT_SHARED_DIR:-$root/../shared}
model=$(cd "$shared/models" && pwd)/TinyStories-656K-Q8_0.gguf
prompt="Once upon a time"
n_predict=128

step_start=0
step() { step_start=$(date +%s%N); echo "== examples: $*"; }
done_step() { echo "   ($(( ($(date +%s%N) - step_start) / 1000000 )) ms)"; }

need_packages=()
command -v pkg-config >/dev/null || need_packages+=(pkg-config)
command -v go >/dev/null || need_packages+=(golang-go)
if [ ${#need_packages[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then
    echo "== examples: installing ${need_packages[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_packages[@]}" >/dev/null ||
      { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_packages[@]}" >/dev/null; }
  else
    echo "test-examples: missing ${need_packages[*]}; run: sudo apt-get install ${need_packages[*]}" >&2
    exit 1
  fi
fi
if ! command -v cargo >/dev/null; then
  echo "test-examples: cargo (Rust) is not installed, so examples/rust cannot be built." >&2
  echo "test-examples: install it (https://rustup.rs or Debian's cargo package) and run again." >&2
  exit 1
fi
[ -f "$model" ] || { echo "test-examples: no model at $model (set LMRT_SHARED_DIR)" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

step "cmake --install into $prefix"
cmake --install "$build" --prefix "$prefix" >/dev/null
cp -r "$root/examples/c" "$root/examples/cpp" "$root/examples/rust" "$root/examples/go" "$work/"
rm -rf "$work/rust/target" "$work/cpp/build"
libdir=$(dirname "$(find "$prefix" -name 'liblmrt.so.*' -type f | head -1)")
export PKG_CONFIG_PATH=$libdir/pkgconfig
export CMAKE_PREFIX_PATH=$prefix
export LMRT_MODEL=$model
done_step

# The installed library, and nothing from the build tree, must be what each program loads.
check_links_installed() {  # program
  local so
  so=$(ldd "$1" | awk '/liblmrt\.so/ {print $3}')
  if [ -n "$so" ] && [ "$(readlink -f "$so")" != "$(readlink -f "$libdir/$(basename "$so")")" ]; then
    echo "test-examples: $1 loads $so, not the installed $libdir" >&2
    exit 1
  fi
}

outputs=()
run_example() {  # name, program...
  local name=$1
  shift
  check_links_installed "$1"
  "$@" "$model" "$prompt" "$n_predict" >"$work/$name.out" 2>"$work/$name.err" ||
    { cat "$work/$name.err" >&2; echo "test-examples: $name failed" >&2; exit 1; }
  outputs+=("$name")
}

step "reference: lmrt run (installed)"
"$prefix/bin/lmrt" run -m "$model" -p "$prompt" -n "$n_predict" -c 256 -t 2 >"$work/lmrt-run.out" 2>/dev/null
done_step

step "C (pkg-config, make)"
make -s -C "$work/c" >/dev/null
run_example c "$work/c/lmrt-stream"
done_step

step "C++ (find_package, lmrt::lmrt and lmrt::lmrt_static)"
cmake -S "$work/cpp" -B "$work/cpp/build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/cpp/build" >/dev/null
run_example cpp "$work/cpp/build/lmrt-stream-cpp"
run_example cpp-static "$work/cpp/build/lmrt-stream-cpp-static"
if ldd "$work/cpp/build/lmrt-stream-cpp-static" | grep -q liblmrt; then
  echo "test-examples: the static C++ example links liblmrt.so" >&2
  exit 1
fi
done_step

step "Rust (cargo build + cargo test, offline)"
(cd "$work/rust" && cargo build --offline --release --quiet && cargo test --offline --release >"$work/cargo-test.log" 2>&1) ||
  { cat "$work/cargo-test.log" >&2 2>/dev/null; echo "test-examples: the Rust build or tests failed" >&2; exit 1; }
grep -E '^test result' "$work/cargo-test.log" | sed 's/^/   /'
run_example rust "$work/rust/target/release/lmrt-stream-rust"
done_step

step "Go (cgo; go build + go test)"
export CGO_LDFLAGS="-Wl,-rpath,$libdir"
(cd "$work/go" && go vet ./... && go build -o lmrt-stream-go ./cmd/lmrt-stream-go && go test -count=1 ./...)
run_example go "$work/go/lmrt-stream-go"
done_step

step "plugin kit: hello built out of tree (find_package + lmrt_add_plugin), loaded by the installed lmrt"
mkdir -p "$work/hello-plugin"
cp "$root/plugins/hello/hello.c" "$work/hello-plugin/"
cat >"$work/hello-plugin/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(hello_plugin C)
find_package(lmrt REQUIRED)
lmrt_add_plugin(hello hello.c)
CMAKE
cmake -S "$work/hello-plugin" -B "$work/hello-plugin/build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/hello-plugin/build" >/dev/null
hello_so=$(find "$work/hello-plugin/build" -name 'lmrt-hello.so' | head -n 1)
[ -n "$hello_so" ] || { echo "test-examples: the out-of-tree plugin build made no lmrt-hello.so" >&2; exit 1; }
"$prefix/bin/lmrt" plugins --plugin "$hello_so" >"$work/plugins.out"
grep -q "hello" "$work/plugins.out" || { cat "$work/plugins.out" >&2; echo "test-examples: hello not listed" >&2; exit 1; }
grep -E "hello" "$work/plugins.out" | sed 's/^/   /'
done_step

echo "== examples: comparing outputs with lmrt run"
[ -s "$work/lmrt-run.out" ] || { echo "test-examples: lmrt run printed nothing" >&2; exit 1; }
fail=0
for name in "${outputs[@]}"; do
  if cmp -s "$work/lmrt-run.out" "$work/$name.out"; then
    echo "   $name: same $(wc -c <"$work/$name.out") bytes as lmrt run"
  else
    echo "test-examples: $name printed something else than lmrt run:" >&2
    diff "$work/lmrt-run.out" "$work/$name.out" >&2 || true
    fail=1
  fi
done
[ $fail -eq 0 ] || exit 1
echo "== examples: the story they all printed:"
sed 's/^/   /' "$work/lmrt-run.out"
