#include "runtime/generate/stop_matcher.h"

#include <gtest/gtest.h>

namespace lmrt {
namespace {

// Streams pieces through the matcher the way the generator does: returns the released text and
// whether a stop string matched.
struct Streamed {
  std::string released;
  bool stopped = false;
  std::string matched;
  size_t held_at_end = 0;
};

Streamed stream(const StopMatcher& m, const std::vector<std::string>& pieces, bool flush = true) {
  Streamed out;
  std::string text;
  size_t emitted = 0;
  for (const std::string& p : pieces) {
    text += p;
    const StopMatcher::Scan s = m.scan(text, emitted);
    if (s.match != std::string::npos) {
      out.released += text.substr(emitted, s.match - emitted);
      out.stopped = true;
      out.matched = m.stop(s.matched);
      return out;
    }
    out.released += text.substr(emitted, text.size() - s.hold - emitted);
    emitted = text.size() - s.hold;
    out.held_at_end = s.hold;
  }
  if (flush) out.released += text.substr(emitted);
  return out;
}

TEST(StopMatcher, StopStringSplitOverTokens) {
  StopMatcher m;
  m.set_stops({"The end"});
  Streamed s = stream(m, {"and they lived. Th", "e e", "nd", " of it"});
  EXPECT_TRUE(s.stopped);
  EXPECT_EQ(s.released, "and they lived. ");
  EXPECT_EQ(s.matched, "The end");
}

TEST(StopMatcher, HeldTextIsReleasedUnchangedWhenTheMatchFails) {
  StopMatcher m;
  m.set_stops({"###"});
  EXPECT_EQ(stream(m, {"a #"}, false).released, "a ");  // "#" may begin "###"
  EXPECT_EQ(stream(m, {"a #"}, false).held_at_end, 1u);
  EXPECT_EQ(stream(m, {"a #", "#"}, false).released, "a ");
  Streamed s = stream(m, {"a #", "#", "x"}, false);  // "##x" cannot become "###"
  EXPECT_EQ(s.released, "a ##x");
  EXPECT_EQ(s.held_at_end, 0u);
  EXPECT_FALSE(s.stopped);
}

TEST(StopMatcher, EarliestOfSeveralStopStrings) {
  StopMatcher m;
  m.set_stops({"world", "lo w", "\n\n"});
  Streamed s = stream(m, {"hel", "lo wor", "ld"});
  EXPECT_TRUE(s.stopped);
  EXPECT_EQ(s.released, "hel");
  EXPECT_EQ(s.matched, "lo w");
}

TEST(StopMatcher, LongestAtTheSameStart) {
  StopMatcher m;
  m.set_stops({"ab", "abc"});
  const StopMatcher::Scan s = m.scan("xxabc", 0);
  EXPECT_EQ(s.match, 2u);
  EXPECT_EQ(m.stop(s.matched), "abc");
}

TEST(StopMatcher, MultiByteNeighbourhood) {
  // "é" is C3 A9; a stop string starting with the same lead byte must not split it, and a stop
  // string right after a multi-byte character cuts exactly before it.
  StopMatcher m;
  m.set_stops({"\xC3\xA8!", "\xE2\x82\xAC"});  // "è!", "€"
  Streamed s = stream(m, {"caf\xC3\xA9", " co\xC3\xBBte 5", "\xE2\x82\xAC"});
  EXPECT_TRUE(s.stopped);
  EXPECT_EQ(s.released, "caf\xC3\xA9 co\xC3\xBBte 5");
  m.set_stops({"\xC3\xA8!"});
  Streamed t = stream(m, {"\xC3\xA8", "?"});
  EXPECT_FALSE(t.stopped);
  EXPECT_EQ(t.released, "\xC3\xA8?");
  EXPECT_EQ(stream(m, {"\xC3\xA8"}, false).held_at_end, 2u);  // the whole character, never half
}

TEST(StopMatcher, FlushReleasesAPartialMatchAtTheEnd) {
  StopMatcher m;
  m.set_stops({"STOP"});
  Streamed s = stream(m, {"go ", "ST"});
  EXPECT_FALSE(s.stopped);
  EXPECT_EQ(s.released, "go ST");
}

TEST(StopMatcher, NoStopsPassesEverythingThrough) {
  StopMatcher m;
  m.set_stops({"", ""});
  EXPECT_TRUE(m.empty());
  Streamed s = stream(m, {"a", "b"}, false);
  EXPECT_FALSE(s.stopped);
  EXPECT_EQ(s.released, "ab");
}

TEST(StopMatcher, StopAtTheVeryStart) {
  StopMatcher m;
  m.set_stops({"\n"});
  Streamed s = stream(m, {"\nhello"});
  EXPECT_TRUE(s.stopped);
  EXPECT_EQ(s.released, "");
}

}  // namespace
}  // namespace lmrt
