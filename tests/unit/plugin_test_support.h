// Shared by the plugin tests: a host with loading enabled and the fixture paths CMake passes in.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "runtime/plugins/plugin_host.h"
#include "runtime/sampling/sampler_chain.h"

namespace lmrt::test {

#ifndef LMRT_TEST_PLUGIN_HELLO
#error the plugin fixtures are wired by plugins/CMakeLists.txt (add_subdirectory(plugins) after tests)
#endif

inline std::unique_ptr<PluginHost> loading_host() {
  PluginHostOptions o;
  o.allow_loading = true;
  return std::make_unique<PluginHost>(o);
}

// A host with `path` loaded and a registry of built-ins plus its samplers.
struct LoadedPlugin {
  std::unique_ptr<PluginHost> host = loading_host();
  SamplerRegistry registry;
  StopCriterionRegistry stops;

  explicit LoadedPlugin(const char* path, const TokenTextSource* vocab = nullptr) {
    const Status s = host->load(path);
    EXPECT_TRUE(s.ok()) << s.message();
    EXPECT_TRUE(host->make_sampler_registry(vocab, &registry).ok());
    EXPECT_TRUE(host->add_stop_criteria_to(stops, vocab).ok());
  }

  std::unique_ptr<SamplerChain> chain(const std::string& spec, uint64_t seed = 1) {
    std::unique_ptr<SamplerChain> c;
    const Status s = SamplerChain::parse(spec, registry, seed, &c);
    EXPECT_TRUE(s.ok()) << s.message();
    return c;
  }
};

}  // namespace lmrt::test
