// The generation options `run` and `chat` share: sampling and stops (--temp, --top-k, ..., --samplers,
// --stop), the sizes -n, -t, -c, and the context they ask for.
#pragma once

#include <lmrt/lmrt.h>

#include <string>
#include <vector>

#include "cli_common.h"

namespace cli {

// The option specs of the sampling and stop flags.
extern const std::vector<OptionSpec> kSamplingOptions;

// Fills the sampling, stop, logprob, beam and context-shift fields of *req from the options given;
// biases, stops and samplers keep the storage req points into (stops: the caller makes the char*
// array). Prints "lmrt: COMMAND: ..." and returns false for a bad value.
bool apply_sampling_options(const char* command, const Args& args, lmrt_generate_request* req,
                            std::vector<lmrt_logit_bias>* biases, std::vector<std::string>* stops,
                            std::string* samplers);

// -n, -t and -c of `run` and `chat` (threads and n_ctx 0: the library's defaults). Prints
// "lmrt: COMMAND: ..." and returns false for a value out of range.
struct GenerationSizes {
  long long n_predict;
  long long threads = 0;
  long long n_ctx = 0;
};
bool parse_generation_sizes(const char* command, const Args& args, GenerationSizes* sizes);

// A context of `sizes` (--kv-f32: an F32 KV cache) or nullptr after printing why.
lmrt_context* create_context(lmrt_model* model, const GenerationSizes& sizes, bool kv_f32);

// The whole file as text; false when it cannot be read.
bool read_text_file(const std::string& path, std::string* out);

}  // namespace cli
