// Issue 19: the `lmrt` tool must never do the wrong thing quietly: JSON that is valid UTF-8 whatever the
// tokens or the model name, files it never replaces or moves, option values it refuses with a message
// that says why.
#include <glob.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "cli_runner.h"
#include "model_variant.h"
#include "runtime/util/utf8.h"
#include "test_support.h"

namespace {

using lmrt::test::CliRun;
using lmrt::test::quoted_model;
using lmrt::test::run_cli;

std::string quoted(const std::string& path) { return "'" + path + "'"; }

// A fresh path under the test temp dir (nothing there yet).
std::string fresh_path(const std::string& name) {
  const std::string path = lmrt::test::write_temp_file(name, "");
  ::unlink(path.c_str());
  return path;
}

bool is_fifo(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0 && S_ISFIFO(st.st_mode);
}

// Token 229 of stories260K is the byte-fallback token <0xE2>, the first byte of a 3-byte character.
TEST(CliRefusals, RunJsonIsValidUtf8WithByteFallbackTokens) {
  CliRun r =
      run_cli("run -m " + quoted_model("stories260K.gguf") + " -p Once -n 3 --logit-bias 229=100 --logprobs 1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(lmrt::validate_utf8(r.out).ok()) << lmrt::validate_utf8(r.out).message();
  EXPECT_NE(r.out.find("\"tokens\":[229,229,229]"), std::string::npos) << r.out;
  // The lone byte is shown as U+FFFD and given exactly in "bytes".
  EXPECT_NE(r.out.find("{\"token\":229,\"text\":\"\xEF\xBF\xBD\",\"bytes\":[226],\"logprob\":"), std::string::npos)
      << r.out;
}

TEST(CliRefusals, InfoJsonIsValidUtf8WithAnInvalidModelName) {
  const std::string path = lmrt::test::write_model_variant(
      "stories260K.gguf", "bad-name.gguf",
      [](const lmrt::GgufKv& kv, lmrt::GgufWriter* w) {
        if (kv.key != "general.name") return false;
        w->add_string("general.name", "story\xff\xfe teller \xe2\x82");
        return true;
      },
      lmrt::test::kKeepShapes);
  ASSERT_FALSE(path.empty());
  CliRun r = run_cli("info -m " + quoted(path) + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(lmrt::validate_utf8(r.out).ok()) << lmrt::validate_utf8(r.out).message();
  EXPECT_NE(r.out.find("\"name\":\"story\xEF\xBF\xBD\xEF\xBF\xBD teller \xEF\xBF\xBD\""), std::string::npos) << r.out;
}

// Pointed at a model, `--cache` moved the model aside and wrote a database in its place.
TEST(CliRefusals, CacheNeverMovesOrReplacesAFileThatIsNotItsOwn) {
  const std::string model = lmrt::test::read_file(lmrt::test::model_path("stories260K.gguf"));
  const std::string copy = lmrt::test::write_temp_file("not-a-cache.gguf", model);
  CliRun r = run_cli("run -m " + quoted_model("stories260K.gguf") + " -p Once -n 3 --cache " + quoted(copy));
  EXPECT_EQ(r.exit_code, 0) << r.err;  // generation goes on without a cache
  EXPECT_NE(r.err.find("is not an lmrt cache"), std::string::npos) << r.err;
  EXPECT_TRUE(lmrt::test::read_file(copy) == model) << "the file was changed";
  glob_t set_aside;
  EXPECT_EQ(::glob((copy + ".damaged-*").c_str(), 0, nullptr, &set_aside), GLOB_NOMATCH);
  ::globfree(&set_aside);
}

// `cache stats /dev/null` called /dev/null a cache with an old schema. (Read-only: /dev/null is
// never opened for writing here, even should this regress; the folder stands for the writing commands.)
TEST(CliRefusals, CacheCommandsRefuseWhatIsNotARegularFile) {
  const std::string folder = fresh_path("cache-folder");
  ASSERT_EQ(::mkdir(folder.c_str(), 0700), 0);
  for (const std::string& cmd : {std::string("stats /dev/null"), "stats " + quoted(folder), "clear " + quoted(folder),
                                 "vacuum " + quoted(folder)}) {
    CliRun r = run_cli("cache " + cmd);
    EXPECT_EQ(r.exit_code, 1) << cmd;
    EXPECT_NE(r.err.find(" is not a regular file"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("old schema"), std::string::npos) << r.err;
  }
  ::rmdir(folder.c_str());
}

// `quantize -o` renamed over whatever the path was (as root it replaced /dev/full).
TEST(CliRefusals, QuantizeReplacesNothingButARegularFile) {
  const std::string q4 = fresh_path("refusals-q4_0.gguf");
  CliRun synth =
      run_cli("bench --synthetic custom --dim 64 --layers 1 --heads 4 --ffn 96 --vocab 320 --ctx 64 --tokenizer " +
              quoted_model("llama2-tokenizer.bin") + " -o " + quoted(q4));
  ASSERT_EQ(synth.exit_code, 0) << synth.err;
  const std::string fifo = fresh_path("refusals-fifo"), folder = fresh_path("refusals-folder"),
                    link = fresh_path("refusals-link-to-fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  ASSERT_EQ(::mkdir(folder.c_str(), 0700), 0);
  ASSERT_EQ(::symlink(fifo.c_str(), link.c_str()), 0);
  // Not /dev/null or /dev/full: should this regress, the test must not replace a device.
  for (const std::string& out : {fifo, folder, link}) {
    CliRun r = run_cli("quantize --interleave -m " + quoted(q4) + " -o " + quoted(out));
    EXPECT_EQ(r.exit_code, 1) << out;
    EXPECT_NE(r.err.find("exists and is not a regular file; it is never replaced"), std::string::npos) << r.err;
  }
  EXPECT_TRUE(is_fifo(fifo));
  struct stat st;
  EXPECT_TRUE(::stat(folder.c_str(), &st) == 0 && S_ISDIR(st.st_mode));
  EXPECT_TRUE(::lstat(link.c_str(), &st) == 0 && S_ISLNK(st.st_mode));

  // A leftover temporary file is neither written through nor removed.
  const std::string out = fresh_path("refusals-out.gguf");
  const std::string tmp = lmrt::test::write_temp_file("refusals-out.gguf.tmp", "someone's file");
  CliRun r = run_cli("quantize --interleave -m " + quoted(q4) + " -o " + quoted(out));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("already exists"), std::string::npos) << r.err;
  EXPECT_EQ(lmrt::test::read_file(tmp), "someone's file");
  ::unlink(tmp.c_str());
  // A regular file is replaced.
  lmrt::test::write_temp_file("refusals-out.gguf", "old output");
  r = run_cli("quantize --interleave -m " + quoted(q4) + " -o " + quoted(out));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(lmrt::test::read_file(out).substr(0, 4), "GGUF");
  for (const std::string& p : {q4, fifo, link, out}) ::unlink(p.c_str());
  ::rmdir(folder.c_str());
}

// `info -m FIFO` waited forever for a writer (run_cli's timeout turns a hang into exit code 124).
TEST(CliRefusals, InfoOnAFifoDoesNotBlock) {
  const std::string fifo = fresh_path("info-fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  CliRun r = run_cli("info -m " + quoted(fifo), 10);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("not a regular file"), std::string::npos) << r.err;
  ::unlink(fifo.c_str());
}

TEST(CliRefusals, SeedMustBeAWholeNumberInRange) {
  const std::string run = "run -m " + quoted_model("stories260K.gguf") + " -p Once -n 2 --temp 0.8 --seed ";
  for (const char* bad :
       {"99999999999999999999999", "18446744073709551616", "18446744073709551615", "-1", "+7", " 7", "7x"}) {
    CliRun r = run_cli(run + "'" + bad + "'");
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_NE(r.err.find("--seed needs a whole number from 0 to 18446744073709551614"), std::string::npos) << r.err;
  }
  CliRun a = run_cli(run + "18446744073709551614 --json"), b = run_cli(run + "18446744073709551614 --json");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out.substr(0, a.out.find("\"timings\"")), b.out.substr(0, b.out.find("\"timings\"")));
}

TEST(CliRefusals, SamplingFlagsAreCheckedAsSamplerSpecsAre) {
  const std::string run = "run -m " + quoted_model("stories260K.gguf") + " -p Once -n 2 ";
  // Not numbers (NaN is never a parameter value).
  for (const char* flag : {"--temp", "--top-p", "--min-p", "--typical"})
    for (const char* bad : {"nan", "NaN", "1e999", "0.5x", ""}) {
      CliRun r = run_cli(run + flag + " '" + bad + "'");
      EXPECT_EQ(r.exit_code, 2) << flag << " " << bad;
      EXPECT_NE(r.err.find(std::string(flag) + " needs a decimal number"), std::string::npos) << r.err;
    }
  // Numbers out of range: the spec parser's message, for greedy and sampled runs alike.
  struct Case {
    const char* flags;
    const char* says;
  } cases[] = {
      {"--top-p 1.5", "top_p: parameter 'p' must be in [0, 1], got 1.5"},
      {"--temp 0.7 --top-p -0.1", "top_p: parameter 'p' must be in [0, 1], got -0.1"},
      {"--min-p 2", "min_p: parameter 'p' must be in [0, 1], got 2"},
      {"--temp 0.7 --typical 1.01", "typical: parameter 'p' must be in [0, 1], got 1.01"},
      {"--temp inf", "temperature: parameter 't' must be in (-inf, inf), got inf"},
  };
  for (const Case& c : cases) {
    CliRun r = run_cli(run + c.flags);
    EXPECT_EQ(r.exit_code, 1) << c.flags;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    CliRun spec = run_cli(run + "--samplers '" + std::string(c.says).substr(0, std::string(c.says).find(':')) + "(" +
                          std::string(c.says).substr(std::string(c.says).rfind(' ') + 1) + ")'");
    EXPECT_NE(spec.err.find(c.says), std::string::npos) << spec.err;
  }
  // 1e-45 is a float (denormal), not "not a number".
  CliRun tiny = run_cli(run + "--temp 1e-45 --seed 3 --json");
  EXPECT_EQ(tiny.exit_code, 0) << tiny.err;
  EXPECT_EQ(tiny.err.find("needs a"), std::string::npos) << tiny.err;
}

TEST(CliRefusals, BeamsThatCannotGrowInTheContextSaySo) {
  CliRun r = run_cli("run -m " + quoted_model("stories260K.gguf") + " -p Once -n 5 --beams 16 -c 8 --json");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("16 beams need at least 16 free context slots"), std::string::npos) << r.err;
}

TEST(CliRefusals, InvalidUtf8StopStringIsRefused) {
  CliRun r = run_cli("run -m " + quoted_model("stories260K.gguf") + " -p Once -n 5 --stop \"$(printf '\\377')\"");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("stop[0]: invalid UTF-8 at byte offset 0"), std::string::npos) << r.err;
}

}  // namespace
