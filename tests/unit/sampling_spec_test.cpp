// Chain spec text: parsing, canonical text, precise errors, and the registry.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "runtime/sampling/builtin_samplers.h"
#include "runtime/sampling/sampler_chain.h"
#include "runtime/sampling/sampler_registry.h"
#include "runtime/sampling/sampler_spec.h"

namespace lmrt {
namespace {

SamplerRegistry builtins() {
  SamplerRegistry r;
  Status st = register_builtin_samplers(r);
  EXPECT_TRUE(st.ok()) << st.message();
  return r;
}

std::string canonical(std::string_view spec) {
  std::unique_ptr<SamplerChain> chain;
  Status st = SamplerChain::parse(spec, builtins(), 1, &chain);
  EXPECT_TRUE(st.ok()) << spec << ": " << st.message();
  return st.ok() ? chain->canonical_text() : "";
}

// The error message of a spec that must be refused with invalid_argument.
std::string error_of(std::string_view spec) {
  std::unique_ptr<SamplerChain> chain;
  Status st = SamplerChain::parse(spec, builtins(), 1, &chain);
  EXPECT_EQ(st.code(), Code::invalid_argument) << spec;
  return st.message();
}

TEST(SamplingSpec, ParsesTheIssueExample) {
  EXPECT_EQ(canonical("penalties(repeat=1.1,last_n=64) top_k(40) top_p(0.9) temperature(0.7) dist"),
            "penalties(repeat=1.1,presence=0,frequency=0,last_n=64) top_k(k=40) top_p(p=0.9,min_keep=1) "
            "temperature(t=0.7) dist");
}

TEST(SamplingSpec, DefaultChainIsWhatTheHeaderSays) {
  EXPECT_EQ(canonical(kDefaultSamplerChain),
            "penalties(repeat=1,presence=0,frequency=0,last_n=64) top_k(k=40) top_p(p=0.95,min_keep=1) "
            "min_p(p=0.05) temperature(t=0.8) dist");
}

TEST(SamplingSpec, EquivalentSpecsHaveIdenticalCanonicalText) {
  const std::string want = "top_k(k=40) top_p(p=0.9,min_keep=1) dist";
  EXPECT_EQ(canonical("top_k(40) top_p(0.9)"), want);  // dist appended
  EXPECT_EQ(canonical("  top_k( k = 40 )\ttop_p(p=0.90, min_keep=1)\ndist() "), want);
  EXPECT_EQ(canonical("top_k(k=+40) top_p(9e-1,1) dist"), want);
  EXPECT_EQ(canonical("top_k(40)top_p(min_keep=1,p=0.9)"), want);
  EXPECT_EQ(canonical(want), want);  // canonical text reads back to itself
  EXPECT_EQ(canonical("top_k"), "top_k(k=40) dist");
  EXPECT_EQ(canonical(""), "dist");
  EXPECT_EQ(canonical("greedy"), "greedy");
  EXPECT_EQ(canonical("logit_bias(15043=-100, 2=5.5, 7=-inf) greedy"), "logit_bias(2=5.5,7=-inf,15043=-100) greedy");
  EXPECT_NE(canonical("top_k(40)"), canonical("top_k(41)"));
  EXPECT_NE(canonical("top_k(40) top_p(0.9)"), canonical("top_p(0.9) top_k(40)"));  // order matters
}

TEST(SamplingSpec, UnknownSamplerName) {
  const std::string msg = error_of("top_k(40) top_q(3)");
  EXPECT_NE(msg.find("unknown sampler 'top_q' at offset 10"), std::string::npos) << msg;
}

TEST(SamplingSpec, BadParameterNames) {
  EXPECT_NE(error_of("top_k(kk=3)").find("top_k: unknown parameter 'kk'"), std::string::npos);
  EXPECT_NE(error_of("top_k(k=40, k=41)").find("'k' given twice"), std::string::npos);
  EXPECT_NE(error_of("top_k(40, 41)").find("top_k: too many arguments"), std::string::npos);
  EXPECT_NE(error_of("dist(1)").find("dist: too many arguments"), std::string::npos);
  EXPECT_NE(error_of("top_p(min_keep=2, 0.9)").find("positional argument '0.9' after a named one"), std::string::npos);
  EXPECT_NE(error_of("temperature").find("temperature: parameter 't' is required"), std::string::npos);
  EXPECT_NE(error_of("top_p(min_keep=2)").find("'p' is required"), std::string::npos);
}

TEST(SamplingSpec, BadParameterValues) {
  EXPECT_NE(error_of("top_k(abc)").find("top_k: parameter 'k' expects an integer, got 'abc'"), std::string::npos);
  EXPECT_NE(error_of("top_k(4.5)").find("expects an integer"), std::string::npos);
  EXPECT_NE(error_of("top_p(0.9x)").find("top_p: parameter 'p' expects a number, got '0.9x'"), std::string::npos);
  EXPECT_NE(error_of("temperature(nan)").find("expects a number"), std::string::npos);
  EXPECT_EQ(canonical("temperature(\"0.7\")"), "temperature(t=0.7) dist");  // quoting does not change a value
}

TEST(SamplingSpec, OutOfRangeValues) {
  EXPECT_NE(error_of("top_p(1.5)").find("top_p: parameter 'p' must be in [0, 1], got 1.5"), std::string::npos);
  EXPECT_NE(error_of("top_p(-0.1)").find("must be in [0, 1]"), std::string::npos);
  EXPECT_NE(error_of("min_p(2)").find("min_p: parameter 'p' must be in [0, 1], got 2"), std::string::npos);
  EXPECT_NE(error_of("typical(1.01)").find("typical: parameter 'p'"), std::string::npos);
  EXPECT_NE(error_of("top_k(-1)").find("top_k: parameter 'k' must be in [0, 2147483647], got -1"), std::string::npos);
  EXPECT_NE(error_of("top_k(99999999999)").find("must be in [0, 2147483647]"), std::string::npos);
  EXPECT_NE(error_of("top_p(0.9, min_keep=0)").find("'min_keep' must be in [1, "), std::string::npos);
  EXPECT_NE(error_of("penalties(repeat=0)").find("penalties: parameter 'repeat' must be in (0, inf), got 0"),
            std::string::npos);
  EXPECT_NE(error_of("penalties(presence=3)").find("'presence' must be in [-2, 2]"), std::string::npos);
  EXPECT_NE(error_of("penalties(last_n=-1)").find("'last_n' must be in [0, 1048576]"), std::string::npos);
  EXPECT_NE(error_of("temperature(inf)").find("'t' must be in (-inf, inf)"), std::string::npos);
  EXPECT_NE(error_of("logit_bias(5=inf)").find("logit_bias: parameter '5' must be in [-inf, inf)"), std::string::npos);
  EXPECT_NE(error_of("logit_bias(5=1, 5=2)").find("token 5 is given twice"), std::string::npos);
  EXPECT_NE(error_of("logit_bias(abc=1)").find("expected TOKEN_ID=BIAS"), std::string::npos);
  EXPECT_NE(error_of("logit_bias(3)").find("expected TOKEN_ID=BIAS"), std::string::npos);
}

TEST(SamplingSpec, UnbalancedParenthesesAndSyntax) {
  EXPECT_NE(error_of("top_k(40").find("offset 5: unbalanced parentheses: the '(' after 'top_k' is never closed"),
            std::string::npos);
  EXPECT_NE(error_of("top_k(k=").find("never closed"), std::string::npos);
  EXPECT_NE(error_of("top_k(40))").find("offset 9: unbalanced parentheses: ')' has no matching '('"),
            std::string::npos);
  EXPECT_NE(error_of(")").find("no matching '('"), std::string::npos);
  EXPECT_NE(error_of("top_k((40))").find("unbalanced parentheses: nested '('"), std::string::npos);
  EXPECT_NE(error_of("top_k(40 (").find("nested '('"), std::string::npos);
  EXPECT_NE(error_of("top_k(40,)").find("empty argument"), std::string::npos);
  EXPECT_NE(error_of("top_k(k=)").find("empty argument"), std::string::npos);
  EXPECT_NE(error_of("top_k(40 41)").find("expected ',' or ')'"), std::string::npos);
  EXPECT_NE(error_of("1top").find("offset 0: expected a sampler name, found '1'"), std::string::npos);
  EXPECT_NE(error_of("top_k(\"40)").find("unterminated quoted value"), std::string::npos);
}

TEST(SamplingSpec, NothingMayFollowASelectingSampler) {
  EXPECT_NE(error_of("greedy top_k(40)").find("'top_k' comes after 'greedy'"), std::string::npos);
  EXPECT_NE(error_of("dist dist").find("'dist' comes after 'dist'"), std::string::npos);
}

TEST(SamplingSpec, RawParserKeepsQuotedValuesAndOffsets) {
  std::vector<SamplerSpec> items;
  ASSERT_TRUE(parse_chain_spec("a.b:c(x=\"y, z)\\\"\", 3) d", &items).ok());
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].name, "a.b:c");
  ASSERT_EQ(items[0].args.size(), 2u);
  EXPECT_EQ(items[0].args[0].key, "x");
  EXPECT_EQ(items[0].args[0].value, "y, z)\"");
  EXPECT_TRUE(items[0].args[0].quoted);
  EXPECT_EQ(items[0].args[1].key, "");
  EXPECT_EQ(items[0].args[1].value, "3");
  EXPECT_EQ(items[1].name, "d");
  EXPECT_EQ(items[1].offset, 22u);
}

// A sampler defined outside the built-ins, as a plugin's would be: keeps even token ids only.
class EvenTokensSampler final : public Sampler {
 public:
  explicit EvenTokensSampler(bool deterministic) : deterministic_(deterministic) {}
  std::string_view name() const override { return "test.even"; }
  std::string canonical_text() const override { return deterministic_ ? "test.even" : "test.even(random=1)"; }
  bool deterministic() const override { return deterministic_; }
  Status apply(CandidateArray& c, Rng&) override {
    size_t kept = 0;
    for (size_t i = 0; i < c.size; ++i) {
      if (c.data[i].id % 2 == 0) c.data[kept++] = c.data[i];
    }
    if (kept == 0) return Error(Code::invalid_argument, "test.even: no even token");
    c.size = kept;
    return Status::Ok();
  }
  Status clone(std::unique_ptr<Sampler>* out) const override {
    *out = std::make_unique<EvenTokensSampler>(*this);
    return Status::Ok();
  }

 private:
  bool deterministic_;
};

Status even_factory(const SamplerSpec& spec, std::unique_ptr<Sampler>* out) {
  SamplerParams params;
  LMRT_RETURN_IF_ERROR(SamplerParams::bind(spec, {"random"}, &params));
  int64_t random = 0;
  LMRT_RETURN_IF_ERROR(params.get_int("random", 0, 0, 1, &random));
  *out = std::make_unique<EvenTokensSampler>(random == 0);
  return Status::Ok();
}

TEST(SamplingSpec, RegistryAcceptsExternalSamplersByName) {
  SamplerRegistry r = builtins();
  ASSERT_TRUE(r.add("test.even", even_factory).ok());
  std::unique_ptr<SamplerChain> chain;
  ASSERT_TRUE(SamplerChain::parse("test.even greedy", r, 1, &chain).ok());
  EXPECT_EQ(chain->canonical_text(), "test.even greedy");
  EXPECT_TRUE(chain->deterministic());
  const float logits[] = {0.0f, 9.0f, 1.0f, 8.0f};  // best odd token 1, best even token 2
  int32_t token = -1;
  ASSERT_TRUE(chain->sample(logits, 4, &token).ok());
  EXPECT_EQ(token, 2);

  ASSERT_TRUE(SamplerChain::parse("test.even(random=1)", r, 1, &chain).ok());
  EXPECT_FALSE(chain->deterministic());

  // Registries are separate objects: the built-in one does not know the external name.
  EXPECT_NE(error_of("test.even").find("unknown sampler 'test.even'"), std::string::npos);

  EXPECT_EQ(r.add("test.even", even_factory).code(), Code::invalid_argument);  // taken
  EXPECT_EQ(r.add("bad name", even_factory).code(), Code::invalid_argument);
  EXPECT_EQ(r.add("x(1)", even_factory).code(), Code::invalid_argument);
  EXPECT_EQ(r.add("", even_factory).code(), Code::invalid_argument);
  EXPECT_TRUE(r.remove("test.even"));
  EXPECT_FALSE(r.remove("test.even"));
  EXPECT_EQ(SamplerChain::parse("test.even", r, 1, &chain).code(), Code::invalid_argument);
}

}  // namespace
}  // namespace lmrt
