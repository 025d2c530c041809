// The lmrt command-line tool, run as a user would.
#include <gtest/gtest.h>
#include <lmrt/lmrt.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "cli_runner.h"
#include "test_support.h"

namespace {

using lmrt::test::CliRun;
using lmrt::test::run_cli;

std::string model(const std::string& name) { return lmrt::test::quoted_model(name); }

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

// `lmrt COMMAND --help` prints that command's usage lines, exit 0; serve its own help; an unknown
// command stays an error.
TEST(Cli, CommandHelpPrintsThatCommandsUsage) {
  CliRun r = run_cli("chat --help");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("  chat      -m MODEL"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("/system /reset /save FILE"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("  run "), std::string::npos) << r.out;
  r = run_cli("bench -h");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("--chat-turns N"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--sequences 1,2,4,8,16"), std::string::npos) << r.out;
  r = run_cli("serve --help");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("--api-key-file"), std::string::npos) << r.out;
  r = run_cli("nosuch --help");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown command 'nosuch'"), std::string::npos) << r.err;
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

// `logits -o` writes as lmrt writes its files (file_replacer.h; FileReplacer.* test the rest): never over
// the model it reads, never through a link or into a FIFO.
TEST(Cli, LogitsOutputNeverReplacesWhatIsNotItsOwn) {
  const std::string dir = lmrt::test::temp_dir();
  const std::string copy = lmrt::test::write_temp_file(
      "cli-logits-model.gguf", lmrt::test::read_file(lmrt::test::model_path("stories260K.gguf")));
  const std::string before = lmrt::test::read_file(copy);
  CliRun self = run_cli("logits -m '" + copy + "' --ids '1 2 3' -o '" + copy + "'");
  EXPECT_EQ(self.exit_code, 2);
  EXPECT_NE(self.err.find("is the input model"), std::string::npos) << self.err;
  EXPECT_EQ(lmrt::test::read_file(copy), before);

  const std::string target = lmrt::test::write_temp_file("cli-logits-users.txt", "the user's");
  const std::string link = dir + "/cli-logits-link.f32";
  ::unlink(link.c_str());
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  CliRun through = run_cli("logits -m '" + copy + "' --ids '1 2 3' -o '" + link + "'");
  ASSERT_EQ(through.exit_code, 0) << through.err;
  EXPECT_EQ(lmrt::test::read_file(target), "the user's");
  EXPECT_EQ(lmrt::test::read_file(link).size(), 512u * 4);  // the link became the logits file

  const std::string fifo = dir + "/cli-logits-fifo";
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  CliRun pipe = run_cli("logits -m '" + copy + "' --ids '1 2 3' -o '" + fifo + "'", 60);
  EXPECT_EQ(pipe.exit_code, 1);
  EXPECT_NE(pipe.err.find("is not a regular file"), std::string::npos) << pipe.err;

  ::unlink(link.c_str());
  ::unlink(fifo.c_str());
  std::remove(copy.c_str());
}

// bench names the kernels it ran in both of its tables (lmrt_isa), and says when LMRT_ISA was not honoured.
TEST(Cli, BenchNamesTheIsaItRan) {
  const lmrt::test::ScopedEnv restore("LMRT_ISA");
  const std::string m = model("stories260K.gguf");
  setenv("LMRT_ISA", "scalar", 1);
  CliRun one = run_cli("bench -m " + m + " -t 1 -p 4 -n 4 --reps 1 --json");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_NE(one.out.find("\"isa\":\"scalar\""), std::string::npos) << one.out;
  EXPECT_EQ(one.err.find("LMRT_ISA"), std::string::npos) << one.err;
  CliRun seqs = run_cli("bench -m " + m + " -t 1 -p 4 -n 4 --reps 1 --sequences 1,2");
  ASSERT_EQ(seqs.exit_code, 0) << seqs.err;
  EXPECT_EQ(seqs.out.rfind("isa=scalar ", 0), 0u) << seqs.out;
  unsetenv("LMRT_ISA");
  const std::string best = lmrt_isa();
  setenv("LMRT_ISA", "avx9000", 1);
  CliRun bogus = run_cli("bench -m " + m + " -t 1 -p 4 -n 4 --reps 1 --sequences 2 --json");
  ASSERT_EQ(bogus.exit_code, 0) << bogus.err;
  EXPECT_NE(bogus.out.find("\"isa\":\"" + best + "\""), std::string::npos) << bogus.out;
  EXPECT_NE(bogus.err.find("LMRT_ISA=avx9000 is not an instruction set this CPU runs; running " + best),
            std::string::npos)
      << bogus.err;
}

// Every tensor type of llama.cpp's Q3_K_M file, by name (../shared/models/quant/types.tsv).
TEST(Cli, InfoNamesEveryTensorType) {
  const std::string m = model("quant/base-Q3_K_M.gguf");
  CliRun text = run_cli("info -m " + m);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  for (const char* line :
       {"tensors F32     9 ", "tensors Q3_K    17 ", "tensors Q4_K    10 ", "tensors Q5_K    2 ", "tensors Q6_K    1 "})
    EXPECT_NE(text.out.find(line), std::string::npos) << line << "\n" << text.out;
  CliRun json = run_cli("info -m " + m + " --json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  for (const char* type : {"\"F32\":{\"tensors\":9,", "\"Q3_K\":{\"tensors\":17,", "\"Q4_K\":{\"tensors\":10,",
                           "\"Q5_K\":{\"tensors\":2,", "\"Q6_K\":{\"tensors\":1,"})
    EXPECT_NE(json.out.find(type), std::string::npos) << type << "\n" << json.out;
}

// `lmrt logits` on llama.cpp's Q4_K_M file gives llama.cpp's logits for the same ids (the reference file
// of ../shared/models/quant) within 3 % relative RMS, and `lmrt kld` measures exactly that.
TEST(Cli, LogitsAndKldAgainstLlamaCpp) {
  std::string ids = lmrt::test::read_file(lmrt::test::model_path("quant/ids.txt"));
  while (!ids.empty() && (ids.back() == '\n' || ids.back() == ' ')) ids.pop_back();
  const std::string out = lmrt::test::write_temp_file("cli-logits.f32", "");
  CliRun r = run_cli("logits -m " + model("quant/base-Q4_K_M.gguf") + " --ids '" + ids + "' --all -t 2 -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("n_vocab 512 rows 64"), std::string::npos) << r.out;
  EXPECT_EQ(lmrt::test::read_file(out).size(), 64u * 512 * 4);
  const std::string ref = model("quant/base-Q4_K_M.logits.f32");
  CliRun k = run_cli("kld " + ref + " " + out + " --vocab 512 --json");
  ASSERT_EQ(k.exit_code, 0) << k.err;
  const size_t at = k.out.find("\"rms_rel\":");
  ASSERT_NE(at, std::string::npos) << k.out;
  const double rms = std::stod(k.out.substr(at + 10));
  EXPECT_GT(rms, 0.0);
  EXPECT_LE(rms, 0.03) << k.out;
  EXPECT_NE(k.out.find("\"rows\":64,"), std::string::npos) << k.out;
  // The last position alone is the last row of --all, up to the summation order: one row goes through
  // the decode kernel, 64 through the batch GEMM, which add the same exact integer dots of each
  // super-block in another order. A file against itself is no distance at all.
  const std::string last = lmrt::test::write_temp_file("cli-logits-last.f32", "");
  r = run_cli("logits -m " + model("quant/base-Q4_K_M.gguf") + " --ids '" + ids + "' -o " + last);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  {
    const std::string a = lmrt::test::read_file(last), b = lmrt::test::read_file(out).substr(63 * 512 * 4);
    ASSERT_EQ(a.size(), b.size());
    double diff = 0, norm = 0;
    for (size_t i = 0; i < a.size(); i += 4) {
      float x, y;
      std::memcpy(&x, a.data() + i, 4);
      std::memcpy(&y, b.data() + i, 4);
      diff += (double(x) - y) * (double(x) - y);
      norm += double(y) * y;
    }
    EXPECT_LE(std::sqrt(diff / norm), 1e-5) << "the last row alone differs from the last row of --all";
  }
  k = run_cli("kld " + out + " " + out + " -m " + model("quant/base-Q4_K_M.gguf"));
  ASSERT_EQ(k.exit_code, 0) << k.err;
  EXPECT_NE(k.out.find("mean KL divergence  0.000000 nats"), std::string::npos) << k.out;
  EXPECT_NE(k.out.find("top-1 agreement     64/64"), std::string::npos) << k.out;
  EXPECT_NE(k.out.find("relative RMS error  0.000 %"), std::string::npos) << k.out;
  // Mismatched files and bad ids are refused with a message.
  k = run_cli("kld " + out + " " + last + " --vocab 512");
  EXPECT_EQ(k.exit_code, 1);
  EXPECT_NE(k.err.find("different numbers of rows"), std::string::npos) << k.err;
  k = run_cli("kld " + out + " " + out + " --vocab 500");
  EXPECT_EQ(k.exit_code, 1);
  EXPECT_NE(k.err.find("not a whole number of rows of 500"), std::string::npos) << k.err;
  r = run_cli("logits -m " + model("quant/base-Q4_K_M.gguf") + " --ids '1 x' -o " + last);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("'x' is not a token id"), std::string::npos) << r.err;
  r = run_cli("logits -m " + model("quant/base-Q4_K_M.gguf") + " --ids '1 512' -o " + last);
  EXPECT_EQ(r.exit_code, 1);
}

TEST(Cli, InfoPrintsTheArchitecturesFields) {
  CliRun text = run_cli("info -m " + model("arch/gemma3-f16.gguf"));
  ASSERT_EQ(text.exit_code, 0) << text.err;
  for (const char* line : {"window        16 positions on 2 of 2 layers", "rope          neox, 64 dims, base 1e+06",
                           "windowed layers' base 10000", "ffn gelu_tanh, embedding scale 16",
                           "parts         post_attn_norm, post_ffn_norm, qk_norm, tied_output"})
    EXPECT_NE(text.out.find(line), std::string::npos) << line << "\n" << text.out;
  CliRun json = run_cli("info -m " + model("arch/phi3-f16.gguf") + " --json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  for (const char* key : {"\"architecture\":\"phi3\"", "\"rope_style\":\"neox\"", "\"fused_qkv\":true",
                          "\"fused_gate_up\":true", "\"qkv_bias\":false", "\"head_dim\":64"})
    EXPECT_NE(json.out.find(key), std::string::npos) << key << "\n" << json.out;
}

// Byte-level BPE through the CLI: tokenize with and without special tokens and BOS, and info's tokenizer line.
TEST(Cli, TokenizeAndInfoOnByteLevelBpe) {
  const std::string llama3 = "'" + lmrt::test::shared_dir() + "/vocab/llama-bpe.gguf'";
  CliRun tok = run_cli("tokenize -m " + llama3 + " -p 'Hello<|eot_id|>' --special");
  ASSERT_EQ(tok.exit_code, 0) << tok.err;
  EXPECT_EQ(tok.out, "128000 9906 128009\n");
  CliRun plain = run_cli("tokenize -m " + llama3 + " -p 'Hello' --no-bos");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(plain.out, "9906\n");
  CliRun gpt2 = run_cli("tokenize -m '" + lmrt::test::shared_dir() + "/vocab/gpt-2.gguf' -p 'Hello world'");
  ASSERT_EQ(gpt2.exit_code, 0) << gpt2.err;
  EXPECT_EQ(gpt2.out, "15496 995\n");  // no BOS: the vocabulary does not ask for one
  CliRun run = run_cli("run -m '" + lmrt::test::shared_dir() + "/vocab/gpt-2.gguf' -p 'Hello world' -n 3 --json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("\"prompt_tokens\":2"), std::string::npos) << run.out;
  CliRun info = run_cli("info -m " + llama3);
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_NE(info.out.find("tokenizer     gpt2, pre-tokenizer llama-bpe (bos 128000, eos 128001"), std::string::npos)
      << info.out;
  CliRun json = run_cli("info -m " + llama3 + " --json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_NE(json.out.find("\"tokenizer\":{\"model\":\"gpt2\",\"pre\":\"llama-bpe\",\"bos\":128000"), std::string::npos)
      << json.out;
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
