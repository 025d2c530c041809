// PluginStopCriterion: a stop criterion from a plugin behind the StopCriterion interface. It checks
// every answer (a known action, a byte count within the text) and turns a bad one into Code::plugin.
#pragma once

#include <memory>
#include <string>

#include "runtime/plugins/plugin_library.h"
#include "runtime/plugins/plugin_vocab.h"
#include "runtime/sampling/stop_criterion.h"

namespace lmrt {

// Builds an instance of `def` (one of lib->stop_criteria()); `vocab` may be null.
Status make_plugin_stop_criterion(std::shared_ptr<const PluginLibrary> lib, const lmrt_plugin_stop_def* def,
                                  const std::string& config, const TokenTextSource* vocab,
                                  std::unique_ptr<StopCriterion>* out);

StopCriterionFactory plugin_stop_factory(std::shared_ptr<const PluginLibrary> lib, const lmrt_plugin_stop_def* def,
                                         const TokenTextSource* vocab);

}  // namespace lmrt
