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

TEST(Cli, GenerationControlFlags) {
  const std::string m = model("TinyStories-656K-Q8_0.gguf");
  CliRun lp = run_cli("run -m " + m + " -p 'Once upon a time' -n 5 --logprobs 3 --json");
  ASSERT_EQ(lp.exit_code, 0) << lp.err;
  EXPECT_NE(lp.out.find("\"logprobs\":[{\"token\":"), std::string::npos) << lp.out;
  EXPECT_NE(lp.out.find("\"top\":[{"), std::string::npos) << lp.out;
  CliRun beams = run_cli("run -m " + m + " -p 'Once' -n 6 --beams 3 --json");
  ASSERT_EQ(beams.exit_code, 0) << beams.err;
  EXPECT_NE(beams.out.find("\"beams\":[{"), std::string::npos) << beams.out;
  CliRun stop = run_cli("run -m " + m + " -p 'Once upon a time' -n 60 --stop . --stop '!' --json");
  ASSERT_EQ(stop.exit_code, 0) << stop.err;
  EXPECT_NE(stop.out.find("\"finish_reason\":\"stop\""), std::string::npos) << stop.out;
  CliRun sampled = run_cli("run -m " + m +
                           " -p 'Once' -n 20 --temp 0.8 --top-k 40 --top-p 0.9 --min-p 0.05 "
                           "--typical 0.95 --repeat-penalty 1.1 --repeat-last-n 32 --presence-penalty 0.5 "
                           "--frequency-penalty 0.5 --logit-bias 2=-inf --seed 11 -c 128 --json");
  ASSERT_EQ(sampled.exit_code, 0) << sampled.err;
  CliRun again = run_cli("run -m " + m +
                         " -p 'Once' -n 20 --temp 0.8 --top-k 40 --top-p 0.9 --min-p 0.05 "
                         "--typical 0.95 --repeat-penalty 1.1 --repeat-last-n 32 --presence-penalty 0.5 "
                         "--frequency-penalty 0.5 --logit-bias 2=-inf --seed 11 -c 128 --json");
  const auto tokens_of = [](const std::string& json) { return json.substr(0, json.find("\"finish_reason\"")); };
  EXPECT_EQ(tokens_of(sampled.out), tokens_of(again.out)) << "same seed, same tokens";
  CliRun shift =
      run_cli("run -m " + model("stories260K.gguf") + " -p 'Once' -n 100 -c 32 --context-shift --keep 1 --json");
  ASSERT_EQ(shift.exit_code, 0) << shift.err;
  EXPECT_NE(shift.out.find("\"completion_tokens\":100"), std::string::npos) << shift.out;
  CliRun spec = run_cli("run -m " + m + " -p x --samplers 'top_k(0.5)'");
  EXPECT_EQ(spec.exit_code, 1);
  EXPECT_NE(spec.err.find("top_k"), std::string::npos) << spec.err;
}

TEST(Cli, ResponseCacheCommands) {
  const std::string cache = lmrt::test::write_temp_file("cli-cache.sqlite", "");
  std::remove(cache.c_str());
  const std::string cmd = "run -m " + model("stories260K.gguf") + " -p 'Once' -n 30 --json --cache '" + cache + "'";
  CliRun first = run_cli(cmd);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.out.find("\"cache_hit\":false"), std::string::npos) << first.out;
  CliRun second = run_cli(cmd);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_NE(second.out.find("\"cache_hit\":true"), std::string::npos) << second.out;
  const auto text_of = [](const std::string& json) { return json.substr(0, json.find("\"finish_reason\"")); };
  EXPECT_EQ(text_of(first.out), text_of(second.out));
  CliRun stats = run_cli("cache stats '" + cache + "' --json");
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  EXPECT_NE(stats.out.find("\"entries\":1"), std::string::npos) << stats.out;
  EXPECT_EQ(run_cli("cache vacuum '" + cache + "'").exit_code, 0);
  CliRun cleared = run_cli("cache clear '" + cache + "' --json");
  EXPECT_NE(cleared.out.find("\"entries\":0"), std::string::npos) << cleared.out;
  EXPECT_EQ(run_cli("cache frobnicate '" + cache + "'").exit_code, 2);
  // A cache that cannot be opened is a warning; the story is still told.
  CliRun broken = run_cli("run -m " + model("stories260K.gguf") + " -p 'Once' -n 5 --cache /nonexistent-dir/x.sqlite");
  EXPECT_EQ(broken.exit_code, 0) << broken.err;
  EXPECT_NE(broken.err.find("generating without it"), std::string::npos) << broken.err;
}

TEST(Cli, RunWithPlugins) {
  const std::string m = model("TinyStories-656K-Q8_0.gguf");
  CliRun r = run_cli("run -m " + m + " -p 'Once upon a time' -n 60 --json --seed 5 --plugin '" +
                     std::string(LMRT_TEST_PLUGIN_MIROSTAT) + "' --plugin '" + LMRT_TEST_PLUGIN_REGEX_STOP +
                     "' --samplers 'top_k(40) mirostat_v2(tau=5,eta=0.1)' --stop-plugin 'regex(pattern=\"[.!?]\")'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"finish_reason\":\"stop\""), std::string::npos) << r.out;
  CliRun bad = run_cli("run -m " + m + " -p x --plugin /nonexistent/lmrt-x.so");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("cannot load plugin"), std::string::npos) << bad.err;
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

// A synthetic Q4_0 model written by `bench --synthetic`, interleaved by `quantize`, then run.
TEST(Cli, QuantizeInterleaveWritesAModelThatRuns) {
  const std::string q4 = lmrt::test::write_temp_file("cli-q4_0.gguf", "");
  const std::string x16 = lmrt::test::write_temp_file("cli-q4_0x16.gguf", "");
  CliRun synth = run_cli(
      "bench --synthetic custom --dim 64 --layers 2 --heads 4 --ffn 96 --vocab 320 --ctx 64 "
      "--tokenizer " +
      model("llama2-tokenizer.bin") + " -o '" + q4 + "'");
  ASSERT_EQ(synth.exit_code, 0) << synth.err;
  CliRun q = run_cli("quantize --interleave -m '" + q4 + "' -o '" + x16 + "'");
  ASSERT_EQ(q.exit_code, 0) << q.err;
  // 7 matrices per layer and the 320-row output; token_embd and the 5 norms are copied.
  EXPECT_NE(q.out.find("15 Q4_0 matrices interleaved as Q4_0x16"), std::string::npos) << q.out;
  EXPECT_NE(q.out.find("6 tensors copied"), std::string::npos) << q.out;
  CliRun run = run_cli("run -m '" + x16 + "' -p 'Once' -n 4 --json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("\"completion_tokens\":4"), std::string::npos) << run.out;

  CliRun again = run_cli("quantize --interleave -m '" + x16 + "' -o '" + q4 + ".again'");
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.err.find("already interleaved"), std::string::npos) << again.err;
  std::remove(q4.c_str());
  std::remove(x16.c_str());
}

TEST(Cli, QuantizeErrors) {
  CliRun no_flag = run_cli("quantize -m " + model("stories260K.gguf") + " -o /tmp/never.gguf");
  EXPECT_EQ(no_flag.exit_code, 2);
  EXPECT_NE(no_flag.err.find("--interleave"), std::string::npos) << no_flag.err;
  CliRun no_out = run_cli("quantize --interleave -m " + model("stories260K.gguf"));
  EXPECT_EQ(no_out.exit_code, 2);
  EXPECT_NE(no_out.err.find("-o FILE"), std::string::npos) << no_out.err;
  const std::string out = lmrt::test::write_temp_file("cli-f32-x16.gguf", "");
  std::remove(out.c_str());
  CliRun f32 = run_cli("quantize --interleave -m " + model("stories260K.gguf") + " -o '" + out + "'");
  EXPECT_EQ(f32.exit_code, 1);
  EXPECT_NE(f32.err.find("no Q4_0 matrices to interleave"), std::string::npos) << f32.err;
  EXPECT_TRUE(f32.out.empty());
  CliRun missing = run_cli("quantize --interleave -m /nonexistent.gguf -o '" + out + "'");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("/nonexistent.gguf"), std::string::npos) << missing.err;
}

}  // namespace

namespace {

// `lmrt template`: the rendered chat on stdout exactly (no newline added), the model's special
// tokens as bos_token / eos_token, errors on stderr with a non-zero exit.
TEST(CliTemplate, PrintsTheRenderedChatExactly) {
  using lmrt::test::write_temp_file;
  const std::string tmpl = write_temp_file(
      "chat.jinja",
      "{{ bos_token }}{% for m in messages %}[{{ m.role }}] {{ m.content }}{{ eos_token }}\n{% endfor %}"
      "{% if tools %}tools: {{ tools | map(attribute='function.name') | join(',') }}\n{% endif %}"
      "{% if add_generation_prompt %}[assistant]{% endif %}");
  const std::string messages = write_temp_file(
      "chat-messages.json", R"([{"role":"user","content":"Hi ü"},{"role":"assistant","content":"Yo"}])");
  const std::string tools = write_temp_file("chat-tools.json", R"([{"type":"function","function":{"name":"f"}}])");
  CliRun r = run_cli("template -m " + model("stories260K.gguf") + " --template " + tmpl + " --messages " + messages);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "<s>[user] Hi ü</s>\n[assistant] Yo</s>\n[assistant]");
  r = run_cli("template --template " + tmpl + " --messages " + messages + " --tools " + tools +
              " --no-generation-prompt --bos B --eos E");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "B[user] Hi üE\n[assistant] YoE\ntools: f\n");
}

TEST(CliTemplate, ReportsAMissingTemplateAndTheTemplatesOwnError) {
  using lmrt::test::write_temp_file;
  const std::string messages = write_temp_file("chat-messages.json", R"([{"role":"user","content":"Hi"}])");
  CliRun r = run_cli("template -m " + model("stories260K.gguf") + " --messages " + messages);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("tokenizer.chat_template"), std::string::npos) << r.err;
  const std::string raising = write_temp_file("raise.jinja", "{{ raise_exception('roles must alternate') }}");
  r = run_cli("template --template " + raising + " --messages " + messages);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("raise_exception: roles must alternate"), std::string::npos) << r.err;
}

}  // namespace
