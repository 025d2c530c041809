// The structs behind the public opaque handles. Only abi/ sees them.
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "lmrt/lmrt.h"
#include "lmrt/lmrt_plugin.h"
#include "runtime/cache/response_cache.h"
#include "runtime/engine/batch_engine.h"
#include "runtime/engine/engine_thread.h"
#include "runtime/generate/beam_search.h"
#include "runtime/generate/context.h"
#include "runtime/generate/generator.h"
#include "runtime/generate/tokenizer_text_source.h"
#include "runtime/grammar/token_trie.h"
#include "runtime/model/llama_model.h"
#include "runtime/plugins/plugin_host.h"
#include "runtime/sampling/builtin_samplers.h"
#include "runtime/sampling/sampler_chain.h"
#include "runtime/tokenizer/tokenizer.h"

namespace lmrt::abi {

// The "last error" of a handle that several threads share, kept per calling thread.
class PerThreadError {
 public:
  void set(const std::string& message) const {
    std::lock_guard<std::mutex> lock(mu_);
    errors_[std::this_thread::get_id()] = message;
  }
  // Forgets the calling thread's message (each call starts clean, so a thread that reuses an old
  // thread's id never sees its message, and the table does not grow with finished threads).
  void clear() const {
    std::lock_guard<std::mutex> lock(mu_);
    errors_.erase(std::this_thread::get_id());
  }
  const char* get() const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = errors_.find(std::this_thread::get_id());
    return it == errors_.end() ? "" : it->second.c_str();
  }

 private:
  mutable std::mutex mu_;
  mutable std::unordered_map<std::thread::id, std::string> errors_;
};

}  // namespace lmrt::abi

struct lmrt_model {
  std::unique_ptr<lmrt::LlamaModel> llama;
  std::unique_ptr<lmrt::Tokenizer> tokenizer;
  std::array<uint8_t, 32> fingerprint{};                   // for response-cache keys
  std::unique_ptr<lmrt::TokenizerTextSource> text_source;  // token text for plugins
  double load_ms = 0;
  // The vocabulary's byte trie for grammar samplers, built on first use and shared by them.
  std::mutex token_trie_mu;
  std::shared_ptr<const lmrt::TokenTrie> token_trie;

  void set_error(const std::string& message) const { errors.set(message); }
  const char* last_error() const { return errors.get(); }
  lmrt::abi::PerThreadError errors;
};

// A plugin host: lmrt_generate and lmrt_sampler_create_v2 resolve names through `host`.
struct lmrt_plugin_host {
  std::unique_ptr<lmrt::PluginHost> host;

  // Listing snapshot: rebuilt on create and after each successful load, under mu.
  struct Entry {
    uint32_t kind;
    std::string name, plugin, version, path, description;
    uint32_t flags;
  };
  std::mutex mu;
  std::vector<Entry> entries;

  // Shared by threads, so the last error is kept per calling thread.
  lmrt::abi::PerThreadError errors;
  void set_error(const std::string& m) const { errors.set(m); }
  void clear_error() const { errors.clear(); }
  const char* last_error() const { return errors.get(); }

  // Rebuilds the listing: built-ins, then each plugin's samplers and stop criteria.
  lmrt::Status rebuild_entries();
};

struct lmrt_cache {
  std::unique_ptr<lmrt::ResponseCache> cache;
  lmrt::abi::PerThreadError errors;  // errors and warnings, per calling thread
};

struct lmrt_sampler {
  std::string spec;  // what the chain was built from (re-parsed on append)
  uint64_t seed = 0;
  const lmrt_plugin_host* host = nullptr;        // plugin samplers resolve through it
  const lmrt::TokenTextSource* vocab = nullptr;  // token text for plugins
  std::unique_ptr<lmrt::SamplerChain> chain;
  std::string last_error;
};

struct lmrt_context {
  lmrt_model* model = nullptr;
  lmrt_cache* cache = nullptr;  // attached with lmrt_context_set_cache
  std::unique_ptr<lmrt::Context> ctx;
  std::string last_error;
  lmrt::GenerateResult last_result;
  std::vector<lmrt::Beam> beams;      // the last beam search's beams
  std::vector<lmrt_beam> last_beams;  // C views of them
  // kEngine while an engine runs on this context: the engine's thread evaluates into its arena and
  // logits, so the functions that evaluate or read or replace them refuse (engine_owned) rather than
  // corrupt the engine's sequences, and a second engine is refused. kFreed once lmrt_context_free was
  // called while an engine ran: the context is then freed with the engine, by whichever of the two
  // calls clears the other's bit last (one atomic word, so exactly one of them deletes it).
  static constexpr unsigned kEngine = 1, kFreed = 2;
  std::atomic<unsigned> ownership{0};
  bool has_engine() const { return (ownership.load() & kEngine) != 0; }
};

namespace lmrt::abi {

// INVALID_ARGUMENT, naming `what`, while an engine owns ctx; else OK.
inline lmrt::Status engine_owned(const lmrt_context* ctx, const char* what) {
  if (!ctx->has_engine()) return lmrt::Status::Ok();
  return lmrt::Error(lmrt::Code::invalid_argument,
                     std::string(what) + ": an engine runs on this context (free the engine first)");
}

}  // namespace lmrt::abi

// A batch engine on a context.
struct lmrt_engine {
  lmrt_context* ctx = nullptr;
  std::unique_ptr<lmrt::EngineThread> engine;       // the BatchEngine, its lock and its own thread
  lmrt_engine_finish_callback on_finish = nullptr;  // lmrt_engine_params.on_finish
  lmrt_cache* cache = nullptr;                      // lmrt_engine_params.cache
  lmrt::abi::PerThreadError errors;                 // the engine is shared by threads
};
