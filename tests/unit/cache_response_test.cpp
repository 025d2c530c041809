#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "runtime/cache/cached_response.h"

namespace lmrt {
namespace {

CachedResponse sample_response(int n_tokens, int n_top) {
  CachedResponse r;
  r.finish_reason = "length";
  r.prompt_tokens = 12;
  r.completion_tokens = n_tokens;
  for (int i = 0; i < n_tokens; ++i) {
    const std::string piece = (i % 5 == 0) ? " \xC3\xA9t\xC3\xA9" : " word" + std::to_string(i);
    r.text += piece;
    r.piece_lengths.push_back(static_cast<uint32_t>(piece.size()));
    r.piece_tokens.push_back(1);
    r.tokens.push_back(1000 + i);
    CachedTokenLogprob lp;
    lp.token = 1000 + i;
    lp.logprob = -0.01f * static_cast<float>(i);
    for (int j = 0; j < n_top; ++j) lp.top.push_back({2000 + j, -0.5f * static_cast<float>(j + 1)});
    r.logprobs.push_back(lp);
  }
  return r;
}

std::string serialized(const CachedResponse& r) {
  std::string blob;
  Status s = serialize_cached_response(r, &blob);
  EXPECT_TRUE(s.ok()) << s.message();
  return blob;
}

Status parse(const std::string& blob, CachedResponse* out) {
  return deserialize_cached_response(reinterpret_cast<const uint8_t*>(blob.data()), blob.size(), out);
}

// The blob's checksum, recomputed by the test so it can forge blobs whose counts lie.
void reseal(std::string* blob) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 16; i < blob->size(); ++i) {
    h ^= static_cast<uint8_t>((*blob)[i]);
    h *= 0x100000001b3ull;
  }
  for (int i = 0; i < 8; ++i) (*blob)[8 + i] = static_cast<char>(h >> (8 * i));
}

TEST(CacheResponse, RoundTripsEveryField) {
  const CachedResponse r = sample_response(40, 3);
  CachedResponse back;
  ASSERT_TRUE(parse(serialized(r), &back).ok());
  EXPECT_EQ(back, r);
  EXPECT_EQ(back.text, r.text);
  EXPECT_EQ(back.logprobs[7].top[2].token, 2002);
  EXPECT_EQ(back.logprobs[7].top[2].logprob, -1.5f);
}

TEST(CacheResponse, RoundTripsEmptyAndSpecialValues) {
  CachedResponse empty;
  CachedResponse back = sample_response(2, 1);
  ASSERT_TRUE(parse(serialized(empty), &back).ok());
  EXPECT_EQ(back, empty);

  CachedResponse special;
  special.text = std::string("a\0b", 3);
  special.finish_reason = "eos";
  special.tokens = {0, -1, 2147483647};
  special.logprobs = {{5, -INFINITY, {{6, -1e-30f}}}};
  ASSERT_TRUE(parse(serialized(special), &back).ok());
  EXPECT_EQ(back, special);
  EXPECT_TRUE(std::isinf(back.logprobs[0].logprob));
}

TEST(CacheResponse, RefusesPieceLengthsThatDoNotCoverTheText) {
  CachedResponse r = sample_response(3, 0);
  r.piece_lengths.back() += 1;
  std::string blob;
  EXPECT_EQ(serialize_cached_response(r, &blob).code(), Code::invalid_argument);
}

TEST(CacheResponse, EveryTruncationIsRefused) {
  const std::string blob = serialized(sample_response(6, 2));
  CachedResponse out;
  for (size_t n = 0; n < blob.size(); ++n) {
    Status s = parse(blob.substr(0, n), &out);
    ASSERT_FALSE(s.ok()) << "prefix of " << n << " bytes accepted";
    EXPECT_EQ(s.code(), Code::bad_format);
  }
  EXPECT_EQ(deserialize_cached_response(nullptr, 0, &out).code(), Code::bad_format);
}

TEST(CacheResponse, EverySingleBitFlipIsRefused) {
  const std::string blob = serialized(sample_response(6, 2));
  CachedResponse out;
  for (size_t i = 0; i < blob.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string damaged = blob;
      damaged[i] = static_cast<char>(damaged[i] ^ (1 << bit));
      ASSERT_FALSE(parse(damaged, &out).ok()) << "flip of bit " << bit << " in byte " << i << " accepted";
    }
  }
}

TEST(CacheResponse, TrailingBytesAreRefused) {
  std::string blob = serialized(sample_response(2, 0));
  blob.push_back('\0');
  reseal(&blob);
  CachedResponse out;
  EXPECT_EQ(parse(blob, &out).code(), Code::bad_format);
}

TEST(CacheResponse, HugeCountsWithAValidChecksumAreRefusedBeforeAllocating) {
  CachedResponse r;
  r.text = "hi";
  r.finish_reason = "eos";
  std::string blob = serialized(r);
  // Header 16, text 4+2, finish reason 4+3, usage 8: the token count follows.
  const size_t token_count_at = 16 + 6 + 7 + 8;
  for (int i = 0; i < 4; ++i) blob[token_count_at + i] = '\xff';
  reseal(&blob);
  CachedResponse out;
  Status s = parse(blob, &out);
  EXPECT_EQ(s.code(), Code::bad_format);
  EXPECT_NE(s.message().find("token count"), std::string::npos) << s.message();
}

TEST(CacheResponse, PieceTokenCountsMustMatchThePieces) {
  CachedResponse r = sample_response(4, 0);
  r.piece_tokens.pop_back();
  std::string blob;
  EXPECT_EQ(serialize_cached_response(r, &blob).code(), Code::invalid_argument);
  r = sample_response(4, 0);
  r.piece_tokens[0] = 9;  // more tokens than the response has
  EXPECT_EQ(serialize_cached_response(r, &blob).code(), Code::invalid_argument);
}

TEST(CacheResponse, NewerFormatVersionIsUnsupported) {
  std::string blob = serialized(sample_response(1, 0));
  blob[4] = static_cast<char>(blob[4] + 1);  // the next format version
  CachedResponse out;
  EXPECT_EQ(parse(blob, &out).code(), Code::unsupported);
}

TEST(CacheResponse, FailedParseLeavesOutputUntouched) {
  const CachedResponse original = sample_response(3, 1);
  CachedResponse out = original;
  EXPECT_FALSE(parse("garbage garbage garbage", &out).ok());
  EXPECT_EQ(out, original);
}

}  // namespace
}  // namespace lmrt
