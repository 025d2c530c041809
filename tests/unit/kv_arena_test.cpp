// The KV arena's layout contract (each KV head's entries at consecutive positions are adjacent, so
// decode attention reads one sequential stream), the store / load round trip for both types, and
// stores of a range of heads.
#include "runtime/kv/kv_arena.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "runtime/util/fp16.h"

namespace {

using lmrt::KvArena;
using lmrt::KvType;

constexpr uint32_t kLayers = 3, kHeads = 4, kHeadDim = 8, kCtx = 5;

// A distinct value for every (layer, position, element, key or value), exact in F16 (at most 11
// significant bits: integers below 1024 times a power of two).
float sample(uint32_t layer, uint32_t pos, uint32_t i, bool is_value) {
  return static_cast<float>(layer * 200 + pos * 32 + i) * (is_value ? -0.5f : 0.125f);
}

TEST(KvArena, RejectsZeroSizes) {
  std::unique_ptr<KvArena> a;
  EXPECT_FALSE(KvArena::create(0, kHeads, kHeadDim, kCtx, KvType::f16, &a).ok());
  EXPECT_FALSE(KvArena::create(kLayers, 0, kHeadDim, kCtx, KvType::f16, &a).ok());
  EXPECT_FALSE(KvArena::create(kLayers, kHeads, 0, kCtx, KvType::f16, &a).ok());
  EXPECT_FALSE(KvArena::create(kLayers, kHeads, kHeadDim, 0, KvType::f16, &a).ok());
}

class KvArenaTypes : public ::testing::TestWithParam<KvType> {};

TEST_P(KvArenaTypes, StoresEachHeadAsOneStreamOverPositions) {
  std::unique_ptr<KvArena> a;
  ASSERT_TRUE(KvArena::create(kLayers, kHeads, kHeadDim, kCtx, GetParam(), &a).ok());
  const uint32_t kv_dim = kHeads * kHeadDim;
  EXPECT_EQ(a->kv_dim(), kv_dim);
  EXPECT_EQ(a->bytes(), size_t{kLayers} * 2 * kCtx * kv_dim * a->entry_bytes());
  std::vector<float> k(kv_dim), v(kv_dim);
  for (uint32_t l = 0; l < kLayers; ++l)
    for (uint32_t p = 0; p < kCtx; ++p) {
      for (uint32_t i = 0; i < kv_dim; ++i) k[i] = sample(l, p, i, false), v[i] = sample(l, p, i, true);
      a->store(l, p, k.data(), v.data(), nullptr);
    }
  const size_t step = kHeadDim * a->entry_bytes();
  for (uint32_t l = 0; l < kLayers; ++l)
    for (uint32_t h = 0; h < kHeads; ++h)
      for (uint32_t p = 0; p < kCtx; ++p) {
        // Position p of head h sits p entries of head_dim after position 0: one stream per head.
        ASSERT_EQ(a->key(l, h, p), a->key(l, h, 0) + p * step);
        ASSERT_EQ(a->value(l, h, p), a->value(l, h, 0) + p * step);
        for (uint32_t i = 0; i < kHeadDim; ++i) {
          float kf, vf;
          if (GetParam() == KvType::f32) {
            std::memcpy(&kf, a->key(l, h, p) + i * 4, 4);
            std::memcpy(&vf, a->value(l, h, p) + i * 4, 4);
          } else {
            uint16_t kb, vb;
            std::memcpy(&kb, a->key(l, h, p) + i * 2, 2);
            std::memcpy(&vb, a->value(l, h, p) + i * 2, 2);
            kf = lmrt::fp16_to_f32(kb), vf = lmrt::fp16_to_f32(vb);
          }
          ASSERT_EQ(kf, sample(l, p, h * kHeadDim + i, false)) << "layer " << l << " head " << h << " pos " << p;
          ASSERT_EQ(vf, sample(l, p, h * kHeadDim + i, true));
        }
      }
  // load is the inverse of store (the samples are exact in F16 too).
  std::vector<float> k2(kv_dim), v2(kv_dim);
  a->load(2, 3, k2.data(), v2.data());
  for (uint32_t i = 0; i < kv_dim; ++i) {
    EXPECT_EQ(k2[i], sample(2, 3, i, false));
    EXPECT_EQ(v2[i], sample(2, 3, i, true));
  }
}

// store_heads writes only its heads (threads owning different heads store side by side in decode).
TEST_P(KvArenaTypes, StoreHeadsWritesOnlyItsHeads) {
  std::unique_ptr<KvArena> a;
  ASSERT_TRUE(KvArena::create(kLayers, kHeads, kHeadDim, kCtx, GetParam(), &a).ok());
  const uint32_t kv_dim = kHeads * kHeadDim;
  std::vector<float> k(kv_dim), v(kv_dim), k2(kv_dim), v2(kv_dim);
  for (uint32_t i = 0; i < kv_dim; ++i) k[i] = sample(1, 2, i, false), v[i] = sample(1, 2, i, true);
  a->store(1, 2, std::vector<float>(kv_dim, 0.0f).data(), std::vector<float>(kv_dim, 0.0f).data(), nullptr);
  a->store_heads(1, 2, 1, 3, k.data(), v.data(), nullptr);
  a->load(1, 2, k2.data(), v2.data());
  for (uint32_t i = 0; i < kv_dim; ++i) {
    const bool mine = i / kHeadDim >= 1 && i / kHeadDim < 3;
    EXPECT_EQ(k2[i], mine ? k[i] : 0.0f) << "element " << i;
    EXPECT_EQ(v2[i], mine ? v[i] : 0.0f) << "element " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Types, KvArenaTypes, ::testing::Values(KvType::f16, KvType::f32),
                         [](const auto& info) { return info.param == KvType::f16 ? "f16" : "f32"; });

}  // namespace
