#include "runtime/generate/stop_matcher.h"

#include <gtest/gtest.h>

namespace lmrt {
namespace {

// Feeds pieces one by one; returns what was released, and whether a stop matched.
std::pair<std::string, bool> feed(StopMatcher& m, const std::vector<std::string>& pieces, bool flush = true) {
  std::string out;
  for (const std::string& p : pieces)
    if (m.push(p, &out)) return {out, true};
  if (flush) m.flush(&out);
  return {out, false};
}

TEST(StopMatcher, StopStringSplitOverTokens) {
  StopMatcher m;
  m.set_stops({"The end"});
  auto [text, stopped] = feed(m, {"and they lived. Th", "e e", "nd", " of it"});
  EXPECT_TRUE(stopped);
  EXPECT_EQ(text, "and they lived. ");
  EXPECT_EQ(m.matched(), "The end");
}

TEST(StopMatcher, HeldTextIsReleasedUnchangedWhenTheMatchFails) {
  StopMatcher m;
  m.set_stops({"###"});
  std::string out;
  EXPECT_FALSE(m.push("a #", &out));
  EXPECT_EQ(out, "a ");  // "#" may begin "###"
  EXPECT_EQ(m.held(), 1u);
  EXPECT_FALSE(m.push("#", &out));
  EXPECT_EQ(out, "a ");
  EXPECT_FALSE(m.push("x", &out));  // "##x" cannot become "###"
  EXPECT_EQ(out, "a ##x");
  EXPECT_EQ(m.held(), 0u);
}

TEST(StopMatcher, EarliestOfSeveralStopStrings) {
  StopMatcher m;
  m.set_stops({"world", "lo w", "\n\n"});
  auto [text, stopped] = feed(m, {"hel", "lo wor", "ld"});
  EXPECT_TRUE(stopped);
  EXPECT_EQ(text, "hel");
  EXPECT_EQ(m.matched(), "lo w");
}

TEST(StopMatcher, MultiByteNeighbourhood) {
  // "é" is C3 A9; a stop string that starts with the same lead byte as the text's character must
  // not split it, and a stop string right after a multi-byte character cuts exactly before it.
  StopMatcher m;
  m.set_stops({"\xC3\xA8!", "\xE2\x82\xAC"});  // "è!", "€"
  auto [text, stopped] = feed(m, {"caf\xC3\xA9", " co\xC3\xBBte 5", "\xE2\x82\xAC"});
  EXPECT_TRUE(stopped);
  EXPECT_EQ(text, "caf\xC3\xA9 co\xC3\xBBte 5");
  m.set_stops({"\xC3\xA8!"});
  auto [t2, s2] = feed(m, {"\xC3\xA8", "?"});
  EXPECT_FALSE(s2);
  EXPECT_EQ(t2, "\xC3\xA8?");
}

TEST(StopMatcher, FlushReleasesAPartialMatchAtTheEnd) {
  StopMatcher m;
  m.set_stops({"STOP"});
  auto [text, stopped] = feed(m, {"go ", "ST"});
  EXPECT_FALSE(stopped);
  EXPECT_EQ(text, "go ST");
}

TEST(StopMatcher, NoStopsPassesEverythingThrough) {
  StopMatcher m;
  m.set_stops({"", ""});
  auto [text, stopped] = feed(m, {"a", "b"});
  EXPECT_FALSE(stopped);
  EXPECT_EQ(text, "ab");
}

TEST(StopMatcher, StopAtTheVeryStart) {
  StopMatcher m;
  m.set_stops({"\n"});
  auto [text, stopped] = feed(m, {"\nhello"});
  EXPECT_TRUE(stopped);
  EXPECT_EQ(text, "");
}

}  // namespace
}  // namespace lmrt
