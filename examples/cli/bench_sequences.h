// lmrt bench --sequences N,...: aggregate decode throughput of N requests stepped together by the
// batch engine (lmrt_engine_*), per count, against which llama.cpp's `bench --seqs N` is compared.
#pragma once

#include <cstdint>
#include <vector>

#include "lmrt/lmrt.h"

// Runs every count of `counts` `reps` times (medians) with P-token prompts and G greedy tokens each
// (EOS banned, so that every sequence decodes G tokens); prints a table, or one JSON line per count.
// Returns the process exit code.
int bench_sequences(lmrt_model* model, const std::vector<uint32_t>& counts, uint32_t threads, uint32_t p, uint32_t g,
                    uint32_t reps, bool json);
