// The plugin block of the C API and `lmrt plugins`, used as an application would.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "lmrt/lmrt.h"
#include "tests/unit/plugin_test_support.h"

namespace {

TEST(PluginCApiTest, LoadingIsRefusedUntilEnabled) {
  lmrt_plugin_host* host = nullptr;
  ASSERT_EQ(lmrt_plugin_host_create(nullptr, &host, nullptr, 0), LMRT_OK);
  EXPECT_EQ(lmrt_plugin_load(host, LMRT_TEST_PLUGIN_HELLO), LMRT_ERR_PLUGIN);
  EXPECT_NE(std::strstr(lmrt_plugin_host_last_error(host), "plugin loading is disabled"), nullptr);
  lmrt_plugin_host_free(host);
  lmrt_plugin_host_params params;
  ASSERT_EQ(lmrt_plugin_host_params_init(&params), LMRT_OK);
  params.reserved0 = 1;
  char err[128] = "";
  host = nullptr;
  EXPECT_EQ(lmrt_plugin_host_create(&params, &host, err, sizeof err), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(host, nullptr);
  EXPECT_NE(std::strstr(err, "reserved0 must be 0"), nullptr) << err;
}

TEST(PluginCApiTest, LoadsAndListsEntriesWithVersions) {
  lmrt_plugin_host_params params;
  ASSERT_EQ(lmrt_plugin_host_params_init(&params), LMRT_OK);
  params.allow_loading = 1;
  lmrt_plugin_host* host = nullptr;
  ASSERT_EQ(lmrt_plugin_host_create(&params, &host, nullptr, 0), LMRT_OK);
  size_t builtins = 0, n = 0;
  ASSERT_EQ(lmrt_plugin_host_entry_count(host, &builtins), LMRT_OK);
  ASSERT_EQ(lmrt_plugin_load(host, LMRT_TEST_PLUGIN_MIROSTAT), LMRT_OK) << lmrt_plugin_host_last_error(host);
  ASSERT_EQ(lmrt_plugin_load(host, LMRT_TEST_PLUGIN_REGEX_STOP), LMRT_OK);
  EXPECT_EQ(lmrt_plugin_load(host, LMRT_TEST_FIXTURE_GARBAGE), LMRT_ERR_PLUGIN);
  EXPECT_EQ(lmrt_plugin_load(host, "/no/such/plugin.so"), LMRT_ERR_IO);
  ASSERT_EQ(lmrt_plugin_host_entry_count(host, &n), LMRT_OK);
  ASSERT_EQ(n, builtins + 3);
  lmrt_plugin_entry e;
  e.struct_size = sizeof e;
  ASSERT_EQ(lmrt_plugin_host_get_entry(host, builtins + 1, &e), LMRT_OK);
  EXPECT_STREQ(e.name, "mirostat_v2");
  EXPECT_STREQ(e.plugin, "mirostat");
  EXPECT_STREQ(e.version, "1.0.0");
  EXPECT_EQ(e.kind, LMRT_PLUGIN_ENTRY_SAMPLER);
  EXPECT_NE(e.flags & LMRT_PLUGIN_ENTRY_SELECTS, 0u);
  ASSERT_EQ(lmrt_plugin_host_get_entry(host, builtins + 2, &e), LMRT_OK);
  EXPECT_STREQ(e.name, "regex");
  EXPECT_EQ(e.kind, LMRT_PLUGIN_ENTRY_STOP_CRITERION);
  EXPECT_EQ(lmrt_plugin_host_get_entry(host, n, &e), LMRT_ERR_INVALID_ARGUMENT);
  lmrt_plugin_host_free(host);
}

TEST(PluginCApiTest, CliListsPlugins) {
  const std::string cmd = std::string(LMRT_CLI_PATH) + " plugins --plugin " + LMRT_TEST_PLUGIN_DRY + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  size_t got;
  while ((got = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, got);
  const int status = pclose(p);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out;
  EXPECT_NE(out.find("top_k"), std::string::npos) << out;
  EXPECT_NE(out.find("dry            dry          1.0.0"), std::string::npos) << out;

  const std::string bad = std::string(LMRT_CLI_PATH) + " plugins --plugin " + LMRT_TEST_FIXTURE_NO_ENTRY + " 2>&1";
  p = popen(bad.c_str(), "r");
  ASSERT_NE(p, nullptr);
  out.clear();
  while ((got = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, got);
  const int bad_status = pclose(p);
  EXPECT_TRUE(WIFEXITED(bad_status) && WEXITSTATUS(bad_status) == 1);
  EXPECT_NE(out.find("does not export lmrt_plugin_init"), std::string::npos) << out;
}

}  // namespace
