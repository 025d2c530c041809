// lmrt bench --chat-turns N and --shared-prefix S: what prefix reuse in the batch engine
// (lmrt_engine_params.prefix_reuse) saves, measured with it on and off in the same run.
#pragma once

#include <cstdint>

#include "lmrt/lmrt.h"

struct PrefixBenchOptions {
  uint32_t threads = 1;
  uint32_t p = 128;        // tokens of each user message
  uint32_t g = 64;         // tokens of each reply (EOS banned)
  uint32_t reps = 3;       // medians over this many runs
  uint32_t chunk = 64;     // prefill_chunk
  uint32_t turns = 0;      // --chat-turns: turns of one chat
  uint32_t shared = 0;     // --shared-prefix: tokens of a system prompt every request starts with
  uint32_t sequences = 8;  // requests sharing it, submitted at once
  bool json = false;
};

// A chat of `turns` turns through one engine: each turn's prompt is the whole conversation so far
// (the previous prompt and reply) and a new P-token user message; prints the time to first token of
// every turn, with prefix reuse on and off. Returns the process exit code.
int bench_chat_turns(lmrt_model* model, const PrefixBenchOptions& o);

// `sequences` requests of an S-token system prompt and P tokens of their own, submitted at once:
// prints the prompt tokens evaluated (the rest were reused) and the times to first token, with
// prefix reuse on and off. Returns the process exit code.
int bench_shared_prefix(lmrt_model* model, const PrefixBenchOptions& o);
