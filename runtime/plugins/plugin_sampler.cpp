#include "runtime/plugins/plugin_sampler.h"

#include <cmath>
#include <cstddef>
#include <utility>
#include <vector>

#include "runtime/plugins/plugin_config.h"

namespace lmrt {
namespace {

// The plugin sees the chain's candidates without a copy; these pin the shared layout.
static_assert(sizeof(lmrt_plugin_candidate) == sizeof(Candidate));
static_assert(offsetof(lmrt_plugin_candidate, id) == offsetof(Candidate, id));
static_assert(offsetof(lmrt_plugin_candidate, logit) == offsetof(Candidate, logit));
static_assert(offsetof(lmrt_plugin_candidate, p) == offsetof(Candidate, p));

constexpr size_t kErrSize = 512;
// How far the probabilities of a SETS_P sampler may sum away from 1.
constexpr double kProbabilityTolerance = 1e-3;

class PluginSampler final : public Sampler {
 public:
  PluginSampler(std::shared_ptr<const PluginLibrary> lib, const lmrt_plugin_sampler_def* def, void* state,
                std::string canonical, const TokenTextSource* vocab)
      : lib_(std::move(lib)), def_(def), state_(state), canonical_(std::move(canonical)), vocab_(vocab) {}
  ~PluginSampler() override {
    if (state_ != nullptr) def_->destroy(state_);
  }
  PluginSampler(const PluginSampler&) = delete;
  PluginSampler& operator=(const PluginSampler&) = delete;

  std::string_view name() const override { return def_->name; }
  std::string canonical_text() const override { return canonical_; }
  bool deterministic() const override { return (def_->flags & LMRT_PLUGIN_SAMPLER_DETERMINISTIC) != 0; }
  bool always_selects() const override { return (def_->flags & LMRT_PLUGIN_SAMPLER_SELECTS) != 0; }
  bool uses_rng() const override { return (def_->flags & LMRT_PLUGIN_SAMPLER_USES_RNG) != 0; }

  Status reserve(int32_t n_vocab) override {
    if (n_vocab <= 0) return Error(Code::invalid_argument, who() + ": n_vocab must be positive");
    if (def_->reserve != nullptr) {
      char err[kErrSize] = {0};
      if (def_->reserve(state_, n_vocab, err, sizeof err) != 0) return failure("reserve", err);
    }
    if (seen_.size() < static_cast<size_t>(n_vocab)) seen_.assign(static_cast<size_t>(n_vocab), 0);
    if (n_vocab > n_vocab_) n_vocab_ = n_vocab;
    return Status::Ok();
  }

  Status apply(CandidateArray& c, Rng& rng) override {
    if (n_vocab_ == 0) return Error(Code::internal, who() + ": apply before reserve");
    const size_t before = c.size;
    Candidate* const data = c.data;
    lmrt_plugin_candidates pc{reinterpret_cast<lmrt_plugin_candidate*>(c.data), c.size, c.sorted ? 1u : 0u, c.selected};
    char err[kErrSize] = {0};
    const int32_t rc = def_->apply(state_, &pc, reinterpret_cast<lmrt_plugin_rng*>(&rng), err, sizeof err);
    if (rc != 0) return failure("apply", err);
    if (pc.data != reinterpret_cast<lmrt_plugin_candidate*>(data))
      return Error(Code::plugin, who() + " replaced the candidate array pointer");
    if (pc.size == 0 || pc.size > before)
      return Error(Code::plugin, who() + " left " + std::to_string(pc.size) + " candidates (it received " +
                                     std::to_string(before) + "; allowed 1.." + std::to_string(before) + ")");
    c.size = pc.size;
    c.sorted = pc.sorted != 0;
    c.selected = pc.selected;
    LMRT_RETURN_IF_ERROR(validate(c));
    return Status::Ok();
  }

  Status accept(int32_t token) override {
    if (def_->accept == nullptr) return Status::Ok();
    char err[kErrSize] = {0};
    if (def_->accept(state_, token, err, sizeof err) != 0) return failure("accept", err);
    return Status::Ok();
  }

  void reset() override {
    if (def_->reset != nullptr) def_->reset(state_);
  }

  Status clone(std::unique_ptr<Sampler>* out) const override {
    void* copy = nullptr;
    char err[kErrSize] = {0};
    if (def_->clone(state_, &copy, err, sizeof err) != 0 || copy == nullptr) return failure("clone", err);
    auto s = std::make_unique<PluginSampler>(lib_, def_, copy, canonical_, vocab_);
    s->n_vocab_ = n_vocab_;
    s->seen_.assign(seen_.size(), 0);
    *out = std::move(s);
    return Status::Ok();
  }

 private:
  std::string who() const { return "plugin sampler '" + std::string(def_->name) + "' (plugin '" + lib_->name() + "')"; }

  Status failure(const char* call, const char* err) const {
    return Error(Code::plugin, who() + ": " + call + " failed" + (err[0] != '\0' ? ": " + std::string(err) : ""));
  }

  // Checks the array the plugin left; allocation-free (seen_ was sized in reserve()).
  Status validate(const CandidateArray& c) {
    Status bad;
    double sum_p = 0;
    const bool sets_p = (def_->flags & LMRT_PLUGIN_SAMPLER_SETS_P) != 0;
    for (size_t i = 0; i < c.size && bad.ok(); ++i) {
      const Candidate& x = c.data[i];
      if (x.id < 0 || x.id >= n_vocab_) {
        bad = Error(Code::plugin, who() + " returned token id " + std::to_string(x.id) + " at index " +
                                      std::to_string(i) + ", outside the vocabulary of " + std::to_string(n_vocab_) +
                                      " tokens");
      } else if (seen_[static_cast<size_t>(x.id)] != 0) {
        bad = Error(Code::plugin, who() + " returned token id " + std::to_string(x.id) + " twice");
      } else if (std::isnan(x.logit) || x.logit == INFINITY) {
        bad = Error(Code::plugin, who() + " returned a logit of " + (std::isnan(x.logit) ? "NaN" : "+inf") +
                                      " for token " + std::to_string(x.id));
      } else if (c.sorted && i > 0 && !candidate_before(c.data[i - 1], x)) {
        bad = Error(Code::plugin,
                    who() + " marked the candidates sorted but index " + std::to_string(i) + " is out of order");
      } else if (sets_p && !(x.p >= 0.0f && x.p <= 1.0f)) {
        bad = Error(Code::plugin,
                    who() + " returned probability " + std::to_string(x.p) + " for token " + std::to_string(x.id));
      } else {
        seen_[static_cast<size_t>(x.id)] = 1;
        sum_p += x.p;
      }
    }
    for (size_t i = 0; i < c.size; ++i) {
      const int32_t id = c.data[i].id;
      if (id >= 0 && id < n_vocab_) seen_[static_cast<size_t>(id)] = 0;
    }
    LMRT_RETURN_IF_ERROR(bad);
    if (sets_p && std::fabs(sum_p - 1.0) > kProbabilityTolerance)
      return Error(Code::plugin, who() + " returned probabilities that sum to " + std::to_string(sum_p) + ", not 1");
    if (c.selected < -1 || c.selected >= static_cast<int64_t>(c.size))
      return Error(Code::plugin, who() + " selected index " + std::to_string(c.selected) + " of " +
                                     std::to_string(c.size) + " candidates");
    if (always_selects() && c.selected < 0)
      return Error(Code::plugin, who() + " promises to select a token but did not");
    if (c.selected >= 0 && c.data[c.selected].logit == -INFINITY)
      return Error(Code::plugin, who() + " selected token " + std::to_string(c.data[c.selected].id) +
                                     ", whose logit is -inf (impossible)");
    return Status::Ok();
  }

  std::shared_ptr<const PluginLibrary> lib_;  // keeps the code of def_ and state_ loaded
  const lmrt_plugin_sampler_def* def_;
  void* state_;
  std::string canonical_;
  const TokenTextSource* vocab_;
  int32_t n_vocab_ = 0;
  std::vector<uint8_t> seen_;  // per token id: seen in the array being validated
};

}  // namespace

Status make_plugin_sampler(std::shared_ptr<const PluginLibrary> lib, const lmrt_plugin_sampler_def* def,
                           const std::string& config, const TokenTextSource* vocab, std::unique_ptr<Sampler>* out) {
  if (lib == nullptr || def == nullptr) return Error(Code::invalid_argument, "make_plugin_sampler: null plugin");
  lmrt_plugin_env env{sizeof(lmrt_plugin_env), vocab != nullptr ? vocab->n_vocab() : 0, lib->host_api(),
                      reinterpret_cast<const lmrt_plugin_vocab*>(vocab)};
  void* state = nullptr;
  char err[kErrSize] = {0};
  if (def->create(config.c_str(), &env, &state, err, sizeof err) != 0 || state == nullptr) {
    if (state != nullptr) def->destroy(state);
    return Error(Code::plugin, "plugin sampler '" + std::string(def->name) + "' (plugin '" + lib->name() +
                                   "') refused its configuration '" + config + "'" +
                                   (err[0] != '\0' ? ": " + std::string(err) : ""));
  }
  std::string canonical = def->name;
  std::string normal = config;
  if (def->canonical_config != nullptr) {
    const size_t n = def->canonical_config(state, nullptr, 0);
    if (n < (1u << 20)) {
      normal.assign(n + 1, '\0');
      def->canonical_config(state, normal.data(), normal.size());
      normal.resize(n);
    }
  }
  if (!normal.empty()) canonical += "(" + normal + ")";
  *out = std::make_unique<PluginSampler>(std::move(lib), def, state, std::move(canonical), vocab);
  return Status::Ok();
}

SamplerFactory plugin_sampler_factory(std::shared_ptr<const PluginLibrary> lib, const lmrt_plugin_sampler_def* def,
                                      const TokenTextSource* vocab) {
  return [lib = std::move(lib), def, vocab](const SamplerSpec& spec, std::unique_ptr<Sampler>* out) {
    return make_plugin_sampler(lib, def, plugin_config_text(spec.args), vocab, out);
  };
}

}  // namespace lmrt
