// The configuration text a plugin's create() receives: the arguments of a spec item written back in
// spec syntax, `key=value` or a positional `value`, comma-separated, values quoted (with backslash
// escapes for quote and backslash) when they are empty or hold whitespace or any of , ( ) = " or a
// backslash. lmrt_plugin_config_next() in lmrt_plugin.h reads it back.
#pragma once

#include <string>
#include <vector>

#include "runtime/sampling/sampler_spec.h"

namespace lmrt {

std::string plugin_config_text(const std::vector<SamplerArg>& args);

}  // namespace lmrt
