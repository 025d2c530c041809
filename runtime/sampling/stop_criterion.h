// StopCriterion: decides, after each generated token, whether generation stops, goes on, or goes on
// while holding back the tail of the text (because it may still turn into a stop). Stop criteria
// from plugins implement it (runtime/plugins/plugin_stop.h); the generator owns one instance per request.
//
// StopCriterionRegistry: names a request may use (e.g. `regex(pattern="\n\n")`), each mapped to a
// factory that builds a criterion from its configuration text. An ordinary object, no global table:
// the plugin host adds every loaded plugin's stop criteria to a registry the application owns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/util/status.h"

namespace lmrt {

struct StopVerdict {
  enum class Action { proceed, stop, hold };
  Action action = Action::proceed;
  // stop: the text keeps bytes [0, bytes) and the rest is dropped.
  // hold: the last `bytes` bytes must not be emitted yet (they may still become a stop).
  size_t bytes = 0;

  static StopVerdict proceed() { return {}; }
  static StopVerdict stop_at(size_t keep) { return {Action::stop, keep}; }
  static StopVerdict hold_back(size_t n) { return {Action::hold, n}; }
  friend bool operator==(const StopVerdict&, const StopVerdict&) = default;
};

class StopCriterion {
 public:
  virtual ~StopCriterion() = default;

  virtual std::string_view name() const = 0;
  // The text that rebuilds an equal criterion through the registry, e.g. `regex(pattern="x")`.
  virtual std::string canonical_text() const = 0;
  // generated_text is everything generated so far (it only grows until reset()); last_token is
  // the token that was just appended. On success *out has bytes <= generated_text.size().
  virtual Status check(std::string_view generated_text, int32_t last_token, StopVerdict* out) = 0;
  // Forgets everything seen (a new generation starts).
  virtual void reset() = 0;
  // An independent copy with the same configuration and state.
  virtual Status clone(std::unique_ptr<StopCriterion>* out) const = 0;
};

// Builds a criterion from configuration text: the arguments of a spec item in spec syntax, e.g.
// `pattern="a,b",include=1` (see sampler_spec.h). invalid_argument / plugin with a message on failure.
using StopCriterionFactory = std::function<Status(std::string_view config, std::unique_ptr<StopCriterion>* out)>;

class StopCriterionRegistry {
 public:
  // Adds `name`; invalid_argument when it is taken or is not a valid spec name.
  Status add(std::string name, StopCriterionFactory factory);
  bool remove(std::string_view name);
  const StopCriterionFactory* find(std::string_view name) const;
  std::vector<std::string> names() const;

  Status create(std::string_view name, std::string_view config, std::unique_ptr<StopCriterion>* out) const;
  // Builds from one spec item, e.g. `regex(pattern="\n\n")` (grammar of sampler_spec.h).
  Status create_from_spec(std::string_view item, std::unique_ptr<StopCriterion>* out) const;

 private:
  struct Entry {
    std::string name;
    StopCriterionFactory factory;
  };
  std::vector<Entry> entries_;
};

}  // namespace lmrt
