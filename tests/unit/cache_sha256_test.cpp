#include <gtest/gtest.h>

#include <string>

#include "runtime/cache/sha256.h"
#include "test_support.h"

namespace lmrt {
namespace {

// FIPS 180-2 appendix B examples.
TEST(CacheSha256, EmptyMessage) {
  EXPECT_EQ(sha256_hex(Sha256::hash("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(CacheSha256, Abc) {
  EXPECT_EQ(sha256_hex(Sha256::hash("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(CacheSha256, TwoBlockMessage448Bits) {
  EXPECT_EQ(sha256_hex(Sha256::hash("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(CacheSha256, Message896Bits) {
  EXPECT_EQ(
      sha256_hex(Sha256::hash("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmno"
                              "pqrlmnopqrsmnopqrstnopqrstu")),
      "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

TEST(CacheSha256, OneMillionA) {
  const std::string a(1000000, 'a');
  EXPECT_EQ(sha256_hex(Sha256::hash(a)), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(CacheSha256, IncrementalUpdatesMatchOneShotAtEverySplit) {
  std::string msg;
  for (int i = 0; i < 300; ++i) msg.push_back(static_cast<char>(i * 7 + 3));
  const Sha256Digest whole = Sha256::hash(msg);
  for (size_t split = 0; split <= msg.size(); ++split) {
    Sha256 h;
    h.update(msg.data(), split);
    h.update(msg.data() + split, msg.size() - split);
    ASSERT_EQ(h.finish(), whole) << "split at " << split;
  }
  // Byte at a time, across many block boundaries.
  Sha256 h;
  for (char c : msg) h.update(&c, 1);
  EXPECT_EQ(h.finish(), whole);
}

TEST(CacheSha256, MatchesPublishedHashOfTestModel) {
  // ../shared/models/README.md lists sha256 sums computed by sha256sum.
  const std::string bytes = test::read_file(test::model_path("stories260K.gguf"));
  EXPECT_EQ(sha256_hex(Sha256::hash(bytes)), "270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d");
}

}  // namespace
}  // namespace lmrt
