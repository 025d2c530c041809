#include <gtest/gtest.h>

#include "runtime/cache/model_fingerprint.h"
#include "runtime/model/gguf_file.h"
#include "test_support.h"

namespace lmrt {
namespace {

std::unique_ptr<GgufFile> parse_bytes(const std::string& bytes) {
  std::unique_ptr<GgufFile> g;
  Status s = GgufFile::parse(MappedFile::from_bytes(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), &g);
  EXPECT_TRUE(s.ok()) << s.message();
  return g;
}

TEST(CacheFingerprint, SameFileSameFingerprintWhetherMappedOrRead) {
  std::unique_ptr<GgufFile> mapped, read;
  ASSERT_TRUE(GgufFile::open(test::model_path("stories260K.gguf"), true, &mapped).ok());
  ASSERT_TRUE(GgufFile::open(test::model_path("stories260K.gguf"), false, &read).ok());
  EXPECT_EQ(model_fingerprint(*mapped), model_fingerprint(*read));
}

TEST(CacheFingerprint, DifferentModelsDiffer) {
  std::unique_ptr<GgufFile> a, b;
  ASSERT_TRUE(GgufFile::open(test::model_path("stories260K.gguf"), true, &a).ok());
  ASSERT_TRUE(GgufFile::open(test::model_path("TinyStories-656K-Q8_0.gguf"), true, &b).ok());
  EXPECT_NE(model_fingerprint(*a), model_fingerprint(*b));
}

TEST(CacheFingerprint, OneChangedByteInHeaderOrWeightsChangesIt) {
  const std::string original = test::read_file(test::model_path("stories260K.gguf"));
  std::unique_ptr<GgufFile> g = parse_bytes(original);
  ASSERT_NE(g, nullptr);
  const auto base = model_fingerprint(*g);
  const uint64_t data_offset = g->data_offset();
  ASSERT_GT(original.size(), data_offset + 64 * 4096) << "test expects a data section larger than the sampled windows";

  // A metadata byte: the architecture string "llama" -> "llamb" keeps the file parseable.
  std::string meta = original;
  const size_t at = meta.find("llama");
  ASSERT_NE(at, std::string::npos);
  ASSERT_LT(at, data_offset);
  meta[at + 4] = 'b';
  std::unique_ptr<GgufFile> gm = parse_bytes(meta);
  ASSERT_NE(gm, nullptr);
  EXPECT_NE(model_fingerprint(*gm), base);

  // The first and the last weight byte (both inside sampled windows).
  for (size_t pos : {static_cast<size_t>(data_offset), original.size() - 1}) {
    std::string weights = original;
    weights[pos] = static_cast<char>(weights[pos] ^ 0x40);
    std::unique_ptr<GgufFile> gw = parse_bytes(weights);
    ASSERT_NE(gw, nullptr);
    EXPECT_NE(model_fingerprint(*gw), base) << "byte " << pos;
  }
}

}  // namespace
}  // namespace lmrt
