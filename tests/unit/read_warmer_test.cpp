// ReadWarmer: the walk a waiting pool thread makes over the memory of its next job. It must cover every
// cache line of every span (and nothing outside them), take the starts of a span's parts first, keep
// to its budget, and stop cleanly on nothing to do.
#include "runtime/util/read_warmer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <vector>

namespace lmrt {
namespace {

constexpr size_t kLine = ReadWarmer::kLine;

uintptr_t line_of(const uint8_t* p) { return reinterpret_cast<uintptr_t>(p) / kLine * kLine; }

// Every line touched by a walk to the end, in order.
std::vector<uintptr_t> walk(const NextReads& r, size_t budget = ReadWarmer::kBudgetBytes, size_t* steps = nullptr) {
  std::vector<uintptr_t> lines;
  ReadWarmer w(&r, budget);
  size_t n = 0;
  while (w.step([&](const uint8_t* line) { lines.push_back(reinterpret_cast<uintptr_t>(line)); })) ++n;
  EXPECT_FALSE(w.step([&](const uint8_t*) { ADD_FAILURE() << "touched after the end"; }));
  if (steps != nullptr) *steps = n;
  return lines;
}

TEST(ReadWarmer, CoversEveryLineOfEverySpanAndNothingElse) {
  alignas(64) static uint8_t buf[1 << 16];
  // Odd sizes and offsets: shorter than one part, not whole lines, starting inside a line.
  const size_t cases[][2] = {{0, 1}, {3, 63}, {64, 64}, {100, 1000}, {5000, 4099}, {9999, 40000}};
  NextReads r;
  for (const auto& c : cases) r.add(buf + c[0], c[1]);
  ASSERT_EQ(r.count, std::size(cases));
  std::map<uintptr_t, int> touched;
  for (uintptr_t a : walk(r)) ++touched[a];
  std::map<uintptr_t, bool> wanted;
  for (const auto& c : cases)
    for (uintptr_t a = line_of(buf + c[0]); a <= line_of(buf + c[0] + c[1] - 1); a += kLine) wanted[a] = true;
  for (const auto& [a, _] : wanted) EXPECT_GE(touched[a], 1) << "line " << (a - line_of(buf)) / kLine << " missed";
  for (const auto& [a, n] : touched) {
    EXPECT_TRUE(wanted.count(a)) << "line " << (a - line_of(buf)) / kLine << " is outside every span";
    EXPECT_LE(n, 4) << "line " << (a - line_of(buf)) / kLine;  // part borders inside a line, spans sharing one
  }
}

TEST(ReadWarmer, TakesTheStartsOfAllPartsFirstAndSpansInOrder) {
  alignas(64) static uint8_t buf[1 << 18];
  const size_t bytes = ReadWarmer::kParts * 8192;  // parts of 8 KiB
  NextReads r;
  r.add(buf, bytes);
  r.add(buf + bytes, 4096);
  const std::vector<uintptr_t> lines = walk(r);
  const size_t per_step = ReadWarmer::kStepBytes / kLine;
  ASSERT_GE(lines.size(), ReadWarmer::kParts * per_step);
  for (size_t p = 0; p < ReadWarmer::kParts; ++p)
    EXPECT_EQ(lines[p * per_step], reinterpret_cast<uintptr_t>(buf + p * 8192)) << "part " << p;
  // The whole first span comes before any line of the second.
  const auto second = reinterpret_cast<uintptr_t>(buf + bytes);
  size_t first_of_second = lines.size();
  for (size_t i = 0; i < lines.size(); ++i)
    if (lines[i] >= second) {
      first_of_second = i;
      break;
    }
  EXPECT_EQ(first_of_second, bytes / kLine);
  EXPECT_EQ(lines.size(), (bytes + 4096) / kLine);
}

TEST(ReadWarmer, StopsAtItsBudget) {
  static std::vector<uint8_t> big(4 << 20);
  NextReads r;
  r.add(big.data(), big.size());
  size_t steps = 0;
  walk(r, ReadWarmer::kBudgetBytes, &steps);
  EXPECT_EQ(steps, ReadWarmer::kBudgetBytes / ReadWarmer::kStepBytes);
  walk(r, 3000, &steps);
  EXPECT_EQ(steps, (3000 + ReadWarmer::kStepBytes - 1) / ReadWarmer::kStepBytes);
}

TEST(ReadWarmer, NothingToWalk) {
  ReadWarmer none;
  EXPECT_FALSE(none.step([](const uint8_t*) { ADD_FAILURE(); }));
  NextReads empty;
  size_t steps = 1;
  EXPECT_TRUE(walk(empty, ReadWarmer::kBudgetBytes, &steps).empty());
  EXPECT_EQ(steps, 0u);
}

TEST(ReadWarmer, NextReadsDropsEmptyAndExcessSpans) {
  static uint8_t buf[64];
  NextReads r;
  r.add(buf, 0);
  EXPECT_EQ(r.count, 0u);
  for (size_t i = 0; i < NextReads::kMaxSpans + 5; ++i) r.add(buf + (i % 64), 1);
  EXPECT_EQ(r.count, NextReads::kMaxSpans);
  EXPECT_EQ(r.spans[NextReads::kMaxSpans - 1].p, buf + (NextReads::kMaxSpans - 1) % 64);
}

}  // namespace
}  // namespace lmrt
