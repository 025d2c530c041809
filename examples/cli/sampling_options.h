// The sampling and stop options `run` and `chat` share (--temp, --top-k, ..., --samplers, --stop).
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

// The whole file as text; false when it cannot be read.
bool read_text_file(const std::string& path, std::string* out);

}  // namespace cli
