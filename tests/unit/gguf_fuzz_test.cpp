// A deterministic, libFuzzer-style mutation loop over the header region of real GGUF files: byte
// flips, u32/u64 overwrites (at random places and at the places where counts, lengths, types,
// dimensions and offsets live), and truncations. Each mutant must parse or be refused with a
// Status; the ASan/UBSan build turns any crash, out-of-bounds read or huge allocation into a
// failure. A file that parses must also be self-consistent.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <vector>

#include "gguf_test_bytes.h"
#include "runtime/model/gguf_file.h"
#include "test_support.h"

namespace lmrt {
namespace {

using namespace test::gguf;

// splitmix64: a fixed, platform-independent stream (std distributions differ between libraries).
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint64_t below(uint64_t n) { return next() % n; }

 private:
  uint64_t s_;
};

template <typename T>
T read_le(const std::vector<uint8_t>& b, size_t at) {
  T v{};
  std::memcpy(&v, b.data() + at, std::min(sizeof(T), b.size() - at));
  return v;
}

// Values that make readers go wrong: boundaries, sizes near the file's, sign bits.
uint64_t interesting(Rng& rng, uint64_t old, uint64_t file_size) {
  const uint64_t values[] = {0,
                             1,
                             2,
                             3,
                             4,
                             5,
                             13,
                             31,
                             32,
                             33,
                             0xFF,
                             0xFFFF,
                             0x7FFFFFFF,
                             0x80000000,
                             0xFFFFFFFF,
                             uint64_t{1} << 32,
                             uint64_t{1} << 62,
                             uint64_t{1} << 63,
                             ~uint64_t{0},
                             ~uint64_t{0} - 31,
                             file_size,
                             file_size + 1,
                             file_size / 8,
                             old + 1,
                             old - 1,
                             old * 2,
                             old + 32,
                             rng.next()};
  return values[rng.below(sizeof(values) / sizeof(values[0]))];
}

// Field positions from the walker, to aim overwrites at the bytes that matter.
std::vector<size_t> field_offsets(const GgufLayout& L) {
  std::vector<size_t> at = {4, 8, 16};
  for (const auto& kv : L.kvs) {
    at.insert(at.end(), {kv.key_len_at, kv.type_at, kv.value_at});
    if (kv.type == kArray) at.insert(at.end(), {kv.elem_type_at, kv.count_at, kv.first_elem_at});
  }
  for (const auto& t : L.tensors) {
    at.insert(at.end(), {t.name_len_at, t.n_dims_at, t.type_at, t.offset_at});
    for (uint32_t d = 0; d < t.n_dims; ++d) at.push_back(t.dims_at + 8 * d);
  }
  return at;
}

// Touches every byte a parsed file points at, so ASan checks each view lies inside the mapping.
uint64_t touch(const GgufValue& v) {
  uint64_t h = v.u + static_cast<uint64_t>(v.i);
  for (char c : v.str) h = h * 31 + static_cast<unsigned char>(c);
  for (uint64_t k = 0; k < v.size(); ++k) h += touch(v.item(k));
  return h;
}

void check_consistent(const GgufFile& g) {
  const uint8_t* begin = g.file().data();
  const uint8_t* end = begin + g.file().size();
  ASSERT_LE(g.data_offset(), g.file().size());
  ASSERT_EQ(g.data_offset() % g.alignment(), 0u);
  std::set<std::string_view> keys, names;
  volatile uint64_t sink = 0;
  for (const GgufKv& kv : g.metadata()) {
    ASSERT_FALSE(kv.key.empty());
    ASSERT_TRUE(keys.insert(kv.key).second) << kv.key;
    sink = sink + touch(kv.value);
  }
  for (const GgufTensorInfo& t : g.tensors()) {
    ASSERT_TRUE(names.insert(t.name).second) << t.name;
    ASSERT_GE(t.n_dims, 1u);
    ASSERT_LE(t.n_dims, 4u);
    uint64_t n = 1;
    for (uint64_t d : t.ne) n *= d;
    ASSERT_EQ(n, t.n_elements) << t.name;
    const TensorTypeTraits tr = tensor_type_traits(t.type);
    ASSERT_EQ(t.ne[0] % tr.block_size, 0u) << t.name;
    ASSERT_EQ(t.n_bytes, t.n_elements / tr.block_size * tr.block_bytes) << t.name;
    ASSERT_EQ(t.offset % g.alignment(), 0u) << t.name;
    ASSERT_GE(t.data, begin + g.data_offset()) << t.name;
    ASSERT_LE(t.n_bytes, static_cast<uint64_t>(end - t.data)) << t.name;
    sink = sink + t.data[0] + t.data[t.n_bytes - 1];
  }
}

struct FuzzCounts {
  int parsed = 0, refused = 0;
};

FuzzCounts fuzz_header_region(const std::string& original, uint64_t seed, int iterations) {
  FuzzCounts counts;
  const GgufLayout layout = walk_gguf(original);
  const size_t region = layout.data_offset;
  const std::vector<size_t> fields = field_offsets(layout);
  Rng rng(seed);
  // Exactly the file's size on the heap, so ASan sees a read one byte past the end.
  std::vector<uint8_t> work(original.begin(), original.end());
  for (int it = 0; it < iterations; ++it) {
    // Mutate in place and restore afterwards, so only the parse copies the 1 MB file.
    std::vector<std::pair<size_t, uint8_t>> undo;
    auto set_byte = [&](size_t at, uint8_t c) {
      undo.emplace_back(at, work[at]);
      work[at] = c;
    };
    auto overwrite = [&](size_t at, uint64_t v, size_t width) {
      for (size_t k = 0; k < width && at + k < region; ++k) set_byte(at + k, static_cast<uint8_t>(v >> (8 * k)));
    };
    const int n_mutations = 1 + static_cast<int>(rng.below(4));
    for (int m = 0; m < n_mutations; ++m) {
      const size_t at = rng.below(2) ? fields[rng.below(fields.size())] : rng.below(region);
      switch (rng.below(4)) {
        case 0:
          set_byte(at, static_cast<uint8_t>(work[at] ^ (1 + rng.below(255))));
          break;
        case 1:
          overwrite(at, interesting(rng, read_le<uint32_t>(work, at), original.size()), 4);
          break;
        case 2:
          overwrite(at, interesting(rng, read_le<uint64_t>(work, at), original.size()), 8);
          break;
        default:
          overwrite(at, rng.next(), 1 + rng.below(8));
          break;
      }
    }
    size_t size = work.size();
    if (rng.below(8) == 0) size = rng.below(4) == 0 ? rng.below(work.size()) : rng.below(region + 64);

    std::unique_ptr<GgufFile> g;
    // A whole mutant is parsed in place; a truncated one is copied to an allocation of its own size.
    Status s = GgufFile::parse(
        size == work.size() ? MappedFile::view(work.data(), size) : MappedFile::from_bytes(work.data(), size), &g);
    if (s.ok()) {
      ++counts.parsed;
      EXPECT_NE(g, nullptr);
      if (g != nullptr) check_consistent(*g);
    } else {
      ++counts.refused;
      EXPECT_TRUE(s.code() == Code::bad_format || s.code() == Code::unsupported)
          << "iteration " << it << ": code " << static_cast<int>(s.code()) << " " << s.message();
      EXPECT_FALSE(s.message().empty());
      EXPECT_EQ(g, nullptr);
    }
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << "first failure at iteration " << it << " of seed " << seed;
      break;
    }
    for (auto u = undo.rbegin(); u != undo.rend(); ++u) work[u->first] = u->second;
  }
  return counts;
}

TEST(GgufFuzz, MutatedStories260KHeaders) {
  const std::string original = test::read_file(test::model_path("stories260K.gguf"));
  const FuzzCounts c = fuzz_header_region(original, 0x5eed260, 3000);
  // Both outcomes occur: the mutants are neither all harmless nor all caught at the first byte.
  EXPECT_GT(c.parsed, 30);
  EXPECT_GT(c.refused, 1500);
}

TEST(GgufFuzz, MutatedTinyStoriesQ8_0Headers) {
  const std::string original = test::read_file(test::model_path("TinyStories-656K-Q8_0.gguf"));
  const FuzzCounts c = fuzz_header_region(original, 0x5eed656, 500);
  EXPECT_GT(c.parsed, 5);
  EXPECT_GT(c.refused, 250);
}

}  // namespace
}  // namespace lmrt
