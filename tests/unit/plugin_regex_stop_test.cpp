// The regex_stop plugin through the StopCriterion interface: where it stops, and what it holds back.
#include <string>

#include "tests/unit/plugin_test_support.h"

namespace lmrt {
namespace {

using test::LoadedPlugin;

StopVerdict check(StopCriterion& s, const std::string& text) {
  StopVerdict v;
  const Status st = s.check(text, 0, &v);
  EXPECT_TRUE(st.ok()) << st.message();
  return v;
}

std::unique_ptr<StopCriterion> make(LoadedPlugin& p, const std::string& spec) {
  std::unique_ptr<StopCriterion> s;
  const Status st = p.stops.create_from_spec(spec, &s);
  EXPECT_TRUE(st.ok()) << st.message();
  return s;
}

TEST(PluginRegexStopTest, HoldsBackPartialMatchesAndStopsAtTheMatchStart) {
  LoadedPlugin p(LMRT_TEST_PLUGIN_REGEX_STOP);
  auto s = make(p, "regex(pattern=STOP)");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(check(*s, "abc"), StopVerdict::proceed());
  EXPECT_EQ(check(*s, "abc S"), StopVerdict::hold_back(1));
  EXPECT_EQ(check(*s, "abc STO"), StopVerdict::hold_back(3));
  EXPECT_EQ(check(*s, "abc STOP and more"), StopVerdict::stop_at(4));
}

TEST(PluginRegexStopTest, ReleasesTextThatCannotMatchAnyMore) {
  LoadedPlugin p(LMRT_TEST_PLUGIN_REGEX_STOP);
  auto s = make(p, "regex(pattern=STOP)");
  EXPECT_EQ(check(*s, "ST"), StopVerdict::hold_back(2));
  EXPECT_EQ(check(*s, "STx"), StopVerdict::proceed());
  EXPECT_EQ(check(*s, "STxSTOS"), StopVerdict::hold_back(1));  // "STOS" failed; only "S" may still start one
  EXPECT_EQ(check(*s, "STxSTOSTOP"), StopVerdict::stop_at(6));
}

TEST(PluginRegexStopTest, IncludeKeepsTheMatch) {
  LoadedPlugin p(LMRT_TEST_PLUGIN_REGEX_STOP);
  auto s = make(p, "regex(pattern=\"[0-9]{3}\",include=1)");
  EXPECT_EQ(check(*s, "call 1"), StopVerdict::hold_back(1));
  EXPECT_EQ(check(*s, "call 12"), StopVerdict::hold_back(2));
  EXPECT_EQ(check(*s, "call 123 now"), StopVerdict::stop_at(8));
}

TEST(PluginRegexStopTest, LeftmostMatchAmongThoseEndingFirst) {
  LoadedPlugin p(LMRT_TEST_PLUGIN_REGEX_STOP);
  auto s = make(p, "regex(pattern=\"ab|b\")");
  EXPECT_EQ(check(*s, "xxab"), StopVerdict::stop_at(2));
  // Escapes and classes: two newlines, spaces allowed between.
  auto nl = make(p, "regex(pattern=\\n\\s*\\n)");
  EXPECT_EQ(check(*nl, "para one\n"), StopVerdict::hold_back(1));
  EXPECT_EQ(check(*nl, "para one\n  "), StopVerdict::hold_back(3));
  EXPECT_EQ(check(*nl, "para one\n  \npara two"), StopVerdict::stop_at(8));
}

TEST(PluginRegexStopTest, CaseInsensitiveUtf8AndAnchors) {
  LoadedPlugin p(LMRT_TEST_PLUGIN_REGEX_STOP);
  auto s = make(p, "regex(pattern=\"the end\",icase=1)");
  EXPECT_EQ(check(*s, "And so, THE EN"), StopVerdict::hold_back(6));
  EXPECT_EQ(check(*s, "And so, THE END."), StopVerdict::stop_at(8));
  // '.' is one UTF-8 character: "é" is two bytes.
  auto u = make(p, "regex(pattern=\"x.y\")");
  EXPECT_EQ(check(*u, "ax\xC3"), StopVerdict::hold_back(2));
  EXPECT_EQ(check(*u, "ax\xC3\xA9y"), StopVerdict::stop_at(1));
  // ^ anchors to the start of the generated text only.
  auto a = make(p, "regex(pattern=\"^No\")");
  EXPECT_EQ(check(*a, "I said No"), StopVerdict::proceed());
  a->reset();
  EXPECT_EQ(check(*a, "No way"), StopVerdict::stop_at(0));
}

TEST(PluginRegexStopTest, ResetAndCloneKeepTheirOwnState) {
  LoadedPlugin p(LMRT_TEST_PLUGIN_REGEX_STOP);
  auto s = make(p, "regex(pattern=abc)");
  EXPECT_EQ(check(*s, "xab"), StopVerdict::hold_back(2));
  std::unique_ptr<StopCriterion> c;
  ASSERT_TRUE(s->clone(&c).ok());
  EXPECT_EQ(check(*c, "xabc"), StopVerdict::stop_at(1));
  EXPECT_EQ(check(*s, "xabd"), StopVerdict::proceed());
  s->reset();
  EXPECT_EQ(check(*s, "abc"), StopVerdict::stop_at(0));
  EXPECT_EQ(s->canonical_text(), "regex(pattern=abc)");
}

TEST(PluginRegexStopTest, RefusesBadPatterns) {
  LoadedPlugin p(LMRT_TEST_PLUGIN_REGEX_STOP);
  std::unique_ptr<StopCriterion> s;
  for (const char* spec : {"regex(pattern=\"a*\")", "regex(pattern=\"(ab\")", "regex(pattern=\"[z-a]\")",
                           "regex(pattern=\"*a\")", "regex(include=1)", "regex(pattern=a,colour=red)"}) {
    const Status st = p.stops.create_from_spec(spec, &s);
    EXPECT_EQ(st.code(), Code::plugin) << spec;
    EXPECT_FALSE(st.message().empty());
  }
}

}  // namespace
}  // namespace lmrt
