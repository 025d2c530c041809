// After warm-up, sampling a token, accepting it and computing its logprobs allocate nothing
// (counted with tests/alloc_counter.h).
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <new>
#include <vector>

#include "alloc_counter.h"
#include "runtime/sampling/builtin_samplers.h"
#include "runtime/sampling/logprobs.h"
#include "runtime/sampling/sampler_chain.h"

namespace lmrt {
namespace {

using test::AllocationCounter;

TEST(SamplingAllocations, CounterSeesAllocations) {
  AllocationCounter counter;
  void* p = ::operator new(64);  // an explicit call: cannot be elided
  ::operator delete(p);
  EXPECT_EQ(counter.count(), 1);
}

TEST(SamplingAllocations, NoneAfterWarmUp) {
  SamplerRegistry registry;
  ASSERT_TRUE(register_builtin_samplers(registry).ok());
  constexpr int kVocab = 32000;
  std::vector<float> logits(kVocab);
  Rng rng(3);
  for (float& l : logits) l = rng.uniform_float() * 10.0f;

  for (std::string_view spec :
       {kDefaultSamplerChain, std::string_view("greedy"),
        std::string_view("penalties(repeat=1.1,presence=0.5,frequency=0.5,last_n=64) logit_bias(5=-inf,7=2) "
                         "top_k(0) typical(0.95) top_p(0.9) min_p(0.01) temperature(0.7) dist")}) {
    std::unique_ptr<SamplerChain> chain;
    ASSERT_TRUE(SamplerChain::parse(spec, registry, 11, &chain).ok()) << spec;
    ASSERT_TRUE(chain->reserve(kVocab).ok());
    int32_t token = -1;
    TokenLogprobs lp;
    ASSERT_TRUE(chain->sample(logits.data(), kVocab, &token).ok());  // warm-up
    ASSERT_TRUE(chain->accept(token).ok());
    long allocations = 0;
    Status st;
    {
      AllocationCounter counter;
      for (int i = 0; i < 20; ++i) {
        logits[static_cast<size_t>(i * 97)] += 3.0f;  // vary the input a little
        st = chain->sample(logits.data(), kVocab, &token);
        if (!st.ok()) break;
        st = chain->accept(token);
        if (!st.ok()) break;
        st = compute_logprobs(logits.data(), kVocab, token, 20, &lp);
        if (!st.ok()) break;
      }
      allocations = counter.count();
    }
    EXPECT_TRUE(st.ok()) << st.message();
    EXPECT_EQ(allocations, 0) << spec;
  }
}

}  // namespace
}  // namespace lmrt
