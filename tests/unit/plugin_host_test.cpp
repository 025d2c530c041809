// The plugin host: loading real shared objects (good and misbehaving fixtures), the errors each
// failure gives, plugin samplers used through chain specs, lifetime, and concurrency.
#include "runtime/plugins/plugin_host.h"

#include <cmath>
#include <cstdlib>
#include <thread>
#include <vector>

#include "runtime/sampling/sampler_chain.h"
#include "tests/unit/plugin_test_support.h"

namespace lmrt {
namespace {

using test::LoadedPlugin;
using test::loading_host;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(PluginHostTest, LoadingIsRefusedUntilEnabled) {
  PluginHost host(PluginHostOptions{});
  const Status s = host.load(LMRT_TEST_PLUGIN_HELLO);
  EXPECT_EQ(s.code(), Code::plugin);
  EXPECT_TRUE(contains(s.message(), "plugin loading is disabled")) << s.message();
  EXPECT_TRUE(host.plugins().empty());
}

TEST(PluginHostTest, GoodPluginWorksThroughAChainSpec) {
  LoadedPlugin p(LMRT_TEST_PLUGIN_HELLO);
  ASSERT_EQ(p.host->plugins().size(), 1u);
  EXPECT_EQ(p.host->plugins()[0]->name(), "hello");
  EXPECT_EQ(p.host->plugins()[0]->version(), "1.0.0");
  auto chain = p.chain("hello_ban(2) greedy");
  ASSERT_NE(chain, nullptr);
  EXPECT_EQ(chain->canonical_text(), "hello_ban(token=2) greedy");
  const float logits[] = {0.0f, 1.0f, 5.0f, 2.0f};
  int32_t token = -1;
  ASSERT_TRUE(chain->sample(logits, 4, &token).ok());
  EXPECT_EQ(token, 3);  // 2 is banned, 3 is the best of the rest
  // Without the plugin sampler the same logits give 2.
  auto plain = p.chain("greedy");
  ASSERT_TRUE(plain->sample(logits, 4, &token).ok());
  EXPECT_EQ(token, 2);
}

TEST(PluginHostTest, BadConfigurationGivesThePluginsMessage) {
  LoadedPlugin p(LMRT_TEST_PLUGIN_HELLO);
  std::unique_ptr<SamplerChain> chain;
  const Status s = SamplerChain::parse("hello_ban(colour=red)", p.registry, 1, &chain);
  EXPECT_EQ(s.code(), Code::plugin);
  EXPECT_TRUE(contains(s.message(), "the only parameter is 'token'")) << s.message();
}

TEST(PluginHostTest, MissingFileIsAnIoError) {
  auto host = loading_host();
  const Status s = host->load("/nonexistent/dir/lmrt-nothing.so");
  EXPECT_EQ(s.code(), Code::io);
  EXPECT_TRUE(contains(s.message(), "no such file")) << s.message();
}

TEST(PluginHostTest, GarbageFileIsRefused) {
  auto host = loading_host();
  const Status s = host->load(LMRT_TEST_FIXTURE_GARBAGE);
  EXPECT_EQ(s.code(), Code::plugin);
  EXPECT_TRUE(contains(s.message(), "as a shared object")) << s.message();
  EXPECT_TRUE(host->plugins().empty());
}

TEST(PluginHostTest, SharedObjectWithoutEntryPointIsRefused) {
  auto host = loading_host();
  const Status s = host->load(LMRT_TEST_FIXTURE_NO_ENTRY);
  EXPECT_EQ(s.code(), Code::plugin);
  EXPECT_TRUE(contains(s.message(), "does not export lmrt_plugin_init")) << s.message();
}

TEST(PluginHostTest, AnotherAbiMajorIsRefused) {
  auto host = loading_host();
  const Status s = host->load(LMRT_TEST_FIXTURE_BAD_ABI);
  EXPECT_EQ(s.code(), Code::plugin);
  EXPECT_TRUE(contains(s.message(), "built for plugin ABI 2.0")) << s.message();
  EXPECT_TRUE(contains(s.message(), "speaks plugin ABI 1.0")) << s.message();
}

TEST(PluginHostTest, DuplicateNamesAreRefused) {
  auto host = loading_host();
  Status s = host->load(LMRT_TEST_FIXTURE_DUP_NAME);
  EXPECT_EQ(s.code(), Code::plugin);
  EXPECT_TRUE(contains(s.message(), "sampler 'top_k', a name already taken")) << s.message();
  ASSERT_TRUE(host->load(LMRT_TEST_PLUGIN_HELLO).ok());
  s = host->load(LMRT_TEST_PLUGIN_HELLO);
  EXPECT_EQ(s.code(), Code::plugin);
  EXPECT_TRUE(contains(s.message(), "'hello' is already loaded")) << s.message();
  EXPECT_EQ(host->plugins().size(), 1u);
}

TEST(PluginHostTest, CreateFailureIsReportedWithThePluginsMessage) {
  LoadedPlugin p(LMRT_TEST_FIXTURE_CREATE_FAILS);
  std::unique_ptr<SamplerChain> chain;
  const Status s = SamplerChain::parse("top_k(5) create_fails", p.registry, 1, &chain);
  EXPECT_EQ(s.code(), Code::plugin);
  EXPECT_TRUE(contains(s.message(), "the fixture always refuses to be created")) << s.message();
  EXPECT_EQ(chain, nullptr);
}

// A sampler whose output is invalid fails the step with its own message; the chain stays usable
// (it fails the same way again rather than crashing) and other chains from the registry still work.
void expect_bad_output(const char* path, const char* sampler, const std::string& expected) {
  LoadedPlugin p(path);
  auto chain = p.chain(std::string(sampler) + " greedy");
  ASSERT_NE(chain, nullptr);
  const float logits[] = {0.5f, 1.0f, -1.0f, 3.0f, 2.0f};
  int32_t token = -1;
  for (int round = 0; round < 2; ++round) {
    const Status s = chain->sample(logits, 5, &token);
    EXPECT_EQ(s.code(), Code::plugin);
    EXPECT_TRUE(contains(s.message(), expected)) << s.message();
    EXPECT_TRUE(contains(s.message(), sampler)) << s.message();
  }
  auto good = p.chain("top_k(2) greedy");
  ASSERT_TRUE(good->sample(logits, 5, &token).ok());
  EXPECT_EQ(token, 3);
}

TEST(PluginHostTest, OutOfRangeTokenBecomesAPluginError) {
  expect_bad_output(LMRT_TEST_FIXTURE_BAD_TOKEN, "bad_token", "outside the vocabulary of 5 tokens");
}

TEST(PluginHostTest, NanLogitBecomesAPluginError) {
  expect_bad_output(LMRT_TEST_FIXTURE_NAN_LOGIT, "nan_logit", "a logit of NaN");
}

TEST(PluginHostTest, SearchPathAndEnvironmentFindPluginsByName) {
  PluginHostOptions o;
  o.allow_loading = true;
  o.search_path = std::string("/nonexistent:") + LMRT_TEST_PLUGIN_DIR;
  PluginHost host(o);
  ASSERT_TRUE(host.load("hello").ok());
  EXPECT_EQ(host.load("not_a_plugin").code(), Code::io);

  ASSERT_EQ(setenv("LMRT_PLUGIN_PATH", LMRT_TEST_PLUGIN_DIR, 1), 0);
  PluginHostOptions e;
  e.allow_loading = true;
  PluginHost without_env(e);
  EXPECT_EQ(without_env.load("mirostat").code(), Code::io);
  e.use_env_path = true;
  PluginHost with_env(e);
  unsetenv("LMRT_PLUGIN_PATH");
  size_t n = 0;
  const Status s = with_env.load_search_path(&n);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(n, 4u);  // hello, mirostat, dry, regex_stop
  EXPECT_EQ(with_env.plugins().size(), 4u);
}

TEST(PluginHostTest, InstancesKeepTheLibraryLoadedAfterTheHostIsGone) {
  std::unique_ptr<Sampler> sampler;
  {
    LoadedPlugin p(LMRT_TEST_PLUGIN_HELLO);
    std::vector<SamplerSpec> items;
    ASSERT_TRUE(parse_chain_spec("hello_ban(token=1)", &items).ok());
    ASSERT_TRUE(p.registry.create(items[0], &sampler).ok());
  }  // host and registry destroyed
  std::vector<std::unique_ptr<Sampler>> samplers;
  samplers.push_back(std::move(sampler));
  std::unique_ptr<SamplerChain> chain;
  ASSERT_TRUE(SamplerChain::create(std::move(samplers), 1, &chain).ok());
  const float logits[] = {0.0f, 4.0f, 1.0f};
  int32_t token = -1;
  ASSERT_TRUE(chain->sample(logits, 3, &token).ok());
  EXPECT_NE(token, 1);
}

TEST(PluginHostTest, CloneContinuesIdentically) {
  LoadedPlugin p(LMRT_TEST_PLUGIN_MIROSTAT);
  auto a = p.chain("mirostat_v2(tau=3,eta=0.2)", 42);
  std::vector<float> logits(50);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = std::sin(static_cast<float>(i)) * 3.0f;
  int32_t t = 0;
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(a->sample(logits.data(), 50, &t).ok());
    ASSERT_TRUE(a->accept(t).ok());
  }
  std::unique_ptr<SamplerChain> b;
  ASSERT_TRUE(a->clone(&b).ok());
  for (int i = 0; i < 20; ++i) {
    int32_t ta = 0, tb = 0;
    ASSERT_TRUE(a->sample(logits.data(), 50, &ta).ok());
    ASSERT_TRUE(b->sample(logits.data(), 50, &tb).ok());
    ASSERT_EQ(ta, tb) << "step " << i;
    ASSERT_TRUE(a->accept(ta).ok());
    ASSERT_TRUE(b->accept(tb).ok());
  }
}

// The same plugin used by two chains on two threads at once gives what each gives alone.
TEST(PluginHostTest, TwoChainsOnTwoThreadsMatchSequentialRuns) {
  LoadedPlugin mirostat(LMRT_TEST_PLUGIN_MIROSTAT);
  ASSERT_TRUE(mirostat.host->load(LMRT_TEST_PLUGIN_DRY).ok());
  SamplerRegistry registry;
  ASSERT_TRUE(mirostat.host->make_sampler_registry(nullptr, &registry).ok());
  const std::string spec = "dry(multiplier=1,breaker_id=0) top_k(40) mirostat_v2(tau=4,eta=0.1)";
  std::vector<float> logits(200);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = std::cos(static_cast<float>(i) * 0.37f) * 4.0f;
  auto run = [&](uint64_t seed, std::vector<int32_t>* out) {
    std::unique_ptr<SamplerChain> chain;
    if (!SamplerChain::parse(spec, registry, seed, &chain).ok()) return;
    for (int i = 0; i < 300; ++i) {
      int32_t t = -1;
      if (!chain->sample(logits.data(), 200, &t).ok() || !chain->accept(t).ok()) return;
      out->push_back(t);
    }
  };
  std::vector<int32_t> alone1, alone2, par1, par2;
  run(1, &alone1);
  run(2, &alone2);
  ASSERT_EQ(alone1.size(), 300u);
  std::thread t1([&] { run(1, &par1); });
  std::thread t2([&] { run(2, &par2); });
  t1.join();
  t2.join();
  EXPECT_EQ(par1, alone1);
  EXPECT_EQ(par2, alone2);
  EXPECT_NE(alone1, alone2);
}

TEST(PluginHostTest, StopCriteriaAreRegisteredByName) {
  LoadedPlugin p(LMRT_TEST_PLUGIN_REGEX_STOP);
  EXPECT_EQ(p.stops.names(), std::vector<std::string>{"regex"});
  std::unique_ptr<StopCriterion> stop;
  Status s = p.stops.create_from_spec("regex(pattern=\"a$\")", &stop);
  EXPECT_EQ(s.code(), Code::plugin);
  EXPECT_TRUE(contains(s.message(), "'$' is not supported")) << s.message();
  s = p.stops.create_from_spec("nothing(x=1)", &stop);
  EXPECT_EQ(s.code(), Code::invalid_argument);
  EXPECT_TRUE(contains(s.message(), "unknown stop criterion 'nothing'")) << s.message();
}

}  // namespace
}  // namespace lmrt
