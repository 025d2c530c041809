#include "runtime/plugins/plugin_stop.h"

#include <utility>

namespace lmrt {
namespace {

constexpr size_t kErrSize = 512;

class PluginStopCriterion final : public StopCriterion {
 public:
  PluginStopCriterion(std::shared_ptr<const PluginLibrary> lib, const lmrt_plugin_stop_def* def, void* state,
                      std::string config, const TokenTextSource* vocab)
      : lib_(std::move(lib)), def_(def), state_(state), config_(std::move(config)), vocab_(vocab) {}
  ~PluginStopCriterion() override {
    if (state_ != nullptr) def_->destroy(state_);
  }
  PluginStopCriterion(const PluginStopCriterion&) = delete;
  PluginStopCriterion& operator=(const PluginStopCriterion&) = delete;

  std::string_view name() const override { return def_->name; }
  std::string canonical_text() const override {
    return config_.empty() ? std::string(def_->name) : std::string(def_->name) + "(" + config_ + ")";
  }

  Status check(std::string_view text, int32_t last_token, StopVerdict* out) override {
    lmrt_plugin_stop_result r{LMRT_PLUGIN_STOP_CONTINUE, 0};
    char err[kErrSize] = {0};
    if (def_->check(state_, text.data(), text.size(), last_token, &r, err, sizeof err) != 0)
      return Error(Code::plugin, who() + ": check failed" + (err[0] != '\0' ? ": " + std::string(err) : ""));
    switch (r.action) {
      case LMRT_PLUGIN_STOP_CONTINUE:
        *out = StopVerdict::proceed();
        return Status::Ok();
      case LMRT_PLUGIN_STOP_STOP:
      case LMRT_PLUGIN_STOP_HOLD:
        if (r.bytes > text.size())
          return Error(Code::plugin,
                       who() + " answered " + (r.action == LMRT_PLUGIN_STOP_STOP ? "stop at" : "hold back") + " " +
                           std::to_string(r.bytes) + " bytes of a text of " + std::to_string(text.size()) + " bytes");
        *out = r.action == LMRT_PLUGIN_STOP_STOP ? StopVerdict::stop_at(r.bytes) : StopVerdict::hold_back(r.bytes);
        return Status::Ok();
      default:
        return Error(Code::plugin, who() + " answered unknown action " + std::to_string(r.action));
    }
  }

  void reset() override {
    if (def_->reset != nullptr) def_->reset(state_);
  }

  Status clone(std::unique_ptr<StopCriterion>* out) const override {
    if (def_->clone == nullptr) return Error(Code::unsupported, who() + " cannot be cloned (it has no clone function)");
    void* copy = nullptr;
    char err[kErrSize] = {0};
    if (def_->clone(state_, &copy, err, sizeof err) != 0 || copy == nullptr)
      return Error(Code::plugin, who() + ": clone failed" + (err[0] != '\0' ? ": " + std::string(err) : ""));
    *out = std::make_unique<PluginStopCriterion>(lib_, def_, copy, config_, vocab_);
    return Status::Ok();
  }

 private:
  std::string who() const {
    return "plugin stop criterion '" + std::string(def_->name) + "' (plugin '" + lib_->name() + "')";
  }

  std::shared_ptr<const PluginLibrary> lib_;  // keeps the code of def_ and state_ loaded
  const lmrt_plugin_stop_def* def_;
  void* state_;
  std::string config_;
  const TokenTextSource* vocab_;
};

}  // namespace

Status make_plugin_stop_criterion(std::shared_ptr<const PluginLibrary> lib, const lmrt_plugin_stop_def* def,
                                  const std::string& config, const TokenTextSource* vocab,
                                  std::unique_ptr<StopCriterion>* out) {
  if (lib == nullptr || def == nullptr) return Error(Code::invalid_argument, "make_plugin_stop_criterion: null plugin");
  lmrt_plugin_env env{sizeof(lmrt_plugin_env), vocab != nullptr ? vocab->n_vocab() : 0, lib->host_api(),
                      reinterpret_cast<const lmrt_plugin_vocab*>(vocab)};
  void* state = nullptr;
  char err[kErrSize] = {0};
  if (def->create(config.c_str(), &env, &state, err, sizeof err) != 0 || state == nullptr) {
    if (state != nullptr) def->destroy(state);
    return Error(Code::plugin, "plugin stop criterion '" + std::string(def->name) + "' (plugin '" + lib->name() +
                                   "') refused its configuration '" + config + "'" +
                                   (err[0] != '\0' ? ": " + std::string(err) : ""));
  }
  *out = std::make_unique<PluginStopCriterion>(std::move(lib), def, state, config, vocab);
  return Status::Ok();
}

StopCriterionFactory plugin_stop_factory(std::shared_ptr<const PluginLibrary> lib, const lmrt_plugin_stop_def* def,
                                         const TokenTextSource* vocab) {
  return [lib = std::move(lib), def, vocab](std::string_view config, std::unique_ptr<StopCriterion>* out) {
    return make_plugin_stop_criterion(lib, def, std::string(config), vocab, out);
  };
}

}  // namespace lmrt
