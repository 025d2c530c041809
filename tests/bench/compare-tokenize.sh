#!/usr/bin/env bash
# Tokenizer speed and agreement, lmrt vs llama.cpp (the oracle of ../shared/peers/llamacpp/oracle), on
# 1 MB and 4 MB of text: every Markdown file of this checkout and of ../shared plus the vocab test
# strings, repeated (the 4 MB file is the 1 MB file four times). For each vocabulary it checks that
# both give the same ids for the 1 MB file, then prints the median (of 3) user+sys CPU seconds of
# whole processes (`lmrt tokenize -f` vs `oracle tokenize -f`; the empty file is the load alone) and
# lmrt's in-process tokenize CPU time (tests/bench/tokenize_bench.cpp).
#   tests/bench/compare-tokenize.sh            (needs build/examples/cli/lmrt, build/tests/lmrt_tokenize_bench)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
shared=${LMRT_SHARED_DIR:-$root/../shared}
L=${LMRT:-$root/build/examples/cli/lmrt}
B=${LMRT_TOKENIZE_BENCH:-$root/build/tests/lmrt_tokenize_bench}
O=${ORACLE:-$("$shared/peers/llamacpp/oracle/build.sh" | tail -1)/oracle}
dir=${TMPDIR:-/tmp}/lmrt-tokenize-bench
mkdir -p "$dir"
python3 - "$root" "$shared" "$dir" <<'PY'
import glob, sys
root, shared, out = sys.argv[1:]
files = sorted(glob.glob(root + '/**/*.md', recursive=True)) + sorted(glob.glob(shared + '/**/*.md', recursive=True))
files += sorted(glob.glob(shared + '/vocab/*.inp'))
base = '\n'.join(open(f, encoding='utf-8', errors='replace').read() for f in files).encode()
mb = (base * (1 + (1 << 20) // len(base)))[: 1 << 20].decode('utf-8', 'ignore').encode()
open(out + '/1mb.txt', 'wb').write(mb)
open(out + '/4mb.txt', 'wb').write(mb * 4)
open(out + '/empty.txt', 'wb').write(b'')
PY
cpu() { /usr/bin/time -f "%U %S" "$@" 2>&1 >/dev/null | tail -1 | awk '{print $1 + $2}'; }
med() { printf "%s\n" "$@" | sort -g | sed -n 2p; }
echo "| vocabulary | text | tokens | lmrt process CPU s | llama.cpp process CPU s | lmrt tokenize only, CPU s | MB/s |"
echo "| --- | --- | ---: | ---: | ---: | ---: | ---: |"
for v in llama-bpe llama-spm; do
  m=$shared/vocab/$v.gguf
  "$L" tokenize -m "$m" -f "$dir/1mb.txt" --no-bos > "$dir/lmrt.ids"
  "$O" tokenize "$m" -f "$dir/1mb.txt" --no-special --add-bos 0 > "$dir/oracle.ids"
  cmp -s <(tr -s ' \n' '\n\n' < "$dir/lmrt.ids") <(tr -s ' \n' '\n\n' < "$dir/oracle.ids") ||
    { echo "compare-tokenize: $v: lmrt and llama.cpp disagree on 1mb.txt" >&2; exit 1; }
  for f in empty 1mb 4mb; do
    a=(); b=()
    for r in 1 2 3; do
      a+=("$(cpu "$L" tokenize -m "$m" -f "$dir/$f.txt" --no-bos)")
      b+=("$(cpu "$O" tokenize "$m" -f "$dir/$f.txt" --no-special --add-bos 0)")
    done
    inproc="-"; tokens=0; rate="-"
    if [ "$f" != empty ]; then
      read -r _ _ _ tokens _ inproc _ _ _ rate < <("$B" "$m" "$dir/$f.txt" 3)
    fi
    echo "| $v | $f | $tokens | $(med "${a[@]}") | $(med "${b[@]}") | $inproc | $rate |"
  done
done
