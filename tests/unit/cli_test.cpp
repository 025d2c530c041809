// The lmrt command-line tool, run as a user would.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "test_support.h"

namespace {

struct CliRun {
  int exit_code;
  std::string out;
  std::string err;
};

CliRun run_cli(const std::string& args) {
  const std::string err_path = lmrt::test::write_temp_file("cli-stderr.txt", "");
  const std::string cmd = std::string(LMRT_CLI_PATH) + " " + args + " 2>" + err_path;
  CliRun r{-1, "", ""};
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = lmrt::test::read_file(err_path);
  return r;
}

std::string model(const std::string& name) { return "'" + lmrt::test::model_path(name) + "'"; }

TEST(Cli, RunJsonReproducesTheStories260KReference) {
  CliRun r = run_cli("run -m " + model("stories260K.gguf") + " -p '' -n 256 -t 2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string ref = lmrt::test::read_file(lmrt::test::model_path("reference/stories260K.bin.greedy256.txt"));
  std::istringstream ids(ref.substr(10, ref.find('\n') - 10));
  std::string want, id;
  while (ids >> id) want += (want.empty() ? "" : ",") + id;
  EXPECT_NE(r.out.find("\"tokens\":[" + want + "]"), std::string::npos) << r.out.substr(0, 300);
  for (const char* key : {"\"text\":\"Once upon a time", "\"finish_reason\":\"length\"", "\"prompt_tokens\":1",
                          "\"completion_tokens\":256", "\"prefill_ms\":", "\"decode_ms\":", "\"decode_tokens_per_s\":"})
    EXPECT_NE(r.out.find(key), std::string::npos) << key;
}

TEST(Cli, RunStreamsText) {
  CliRun r = run_cli("run -m " + model("TinyStories-656K-Q8_0.gguf") + " -p 'Once upon a time' -n 40");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GT(r.out.size(), 60u);
  EXPECT_NE(r.err.find("40 generated tokens"), std::string::npos) << r.err;
}

TEST(Cli, InfoAndTokenize) {
  CliRun info = run_cli("info -m " + model("TinyStories-656K-Q8_0.gguf") + " --json");
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_NE(info.out.find("\"n_vocab\":2048"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("\"Q8_0\":{\"tensors\":15"), std::string::npos) << info.out;
  CliRun tok = run_cli("tokenize -m " + model("stories260K.gguf") + " -p 'Once upon a time'");
  ASSERT_EQ(tok.exit_code, 0) << tok.err;
  EXPECT_EQ(tok.out.rfind("1 ", 0), 0u) << tok.out;  // BOS first
}

TEST(Cli, ErrorsGoToStderrWithNonZeroExit) {
  CliRun missing = run_cli("run -m /nonexistent.gguf -p hi");
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_TRUE(missing.out.empty());
  EXPECT_NE(missing.err.find("cannot open model"), std::string::npos) << missing.err;
  CliRun legacy = run_cli("info -m " + model("legacy/TinyLLama-v0.ggmlv3.q4_0.bin"));
  EXPECT_NE(legacy.exit_code, 0);
  EXPECT_NE(legacy.err.find("GGJT"), std::string::npos) << legacy.err;
  CliRun bad_opt = run_cli("run --frobnicate");
  EXPECT_EQ(bad_opt.exit_code, 2);
  EXPECT_NE(bad_opt.err.find("unknown option"), std::string::npos);
  CliRun bad_n = run_cli("run -m " + model("stories260K.gguf") + " -p hi -n zero");
  EXPECT_EQ(bad_n.exit_code, 2);
  CliRun bad_utf8 = run_cli("run -m " + model("stories260K.gguf") + " -p \"$(printf '\\377')\"");
  EXPECT_NE(bad_utf8.exit_code, 0);
  EXPECT_NE(bad_utf8.err.find("UTF-8"), std::string::npos) << bad_utf8.err;
  CliRun unknown = run_cli("dance");
  EXPECT_EQ(unknown.exit_code, 2);
}

}  // namespace
