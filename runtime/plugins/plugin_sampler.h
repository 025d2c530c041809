// PluginSampler: a sampler from a plugin, behind the same Sampler interface as the built-ins. It
// hands the chain's candidate array and Rng to the plugin as they are and checks what comes back
// (size, ids in the vocabulary and unique, no NaN or +inf, a valid selection, the sorted promise,
// normalised probabilities when the plugin says it computes them); a bad result becomes a
// Code::plugin Status naming the sampler, its plugin and the problem.
#pragma once

#include <memory>
#include <string>

#include "runtime/plugins/plugin_library.h"
#include "runtime/plugins/plugin_vocab.h"
#include "runtime/sampling/sampler.h"
#include "runtime/sampling/sampler_registry.h"

namespace lmrt {

// Builds an instance of `def` (one of lib->samplers()) from configuration text (plugin_config.h).
// `vocab` may be null; when given it must outlive the instance.
Status make_plugin_sampler(std::shared_ptr<const PluginLibrary> lib, const lmrt_plugin_sampler_def* def,
                           const std::string& config, const TokenTextSource* vocab, std::unique_ptr<Sampler>* out);

// A registry factory for `def`: binds the spec item's arguments into configuration text.
SamplerFactory plugin_sampler_factory(std::shared_ptr<const PluginLibrary> lib, const lmrt_plugin_sampler_def* def,
                                      const TokenTextSource* vocab);

}  // namespace lmrt
