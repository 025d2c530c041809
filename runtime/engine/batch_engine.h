// Many requests on one context: each is a sequence of the context's KV arena (KvSequences), and every
// step is one forward pass over the tokens of all of them (StepPlanner picks which), so the weights
// are read once per step however many sequences decode. Each request keeps its own sampler chain,
// stop strings, logprobs and sink (SequenceDecoder), and its tokens are those it would get alone.
//
// One thread at a time uses an engine; a sink may call cancel() (nothing else of the engine).
// submit() allocates; step() allocates nothing once a request is running.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "runtime/engine/sequence_pool.h"
#include "runtime/engine/step_planner.h"
#include "runtime/generate/cached_generation.h"
#include "runtime/generate/context.h"
#include "runtime/generate/generator.h"
#include "runtime/generate/sequence_decoder.h"
#include "runtime/kv/kv_sequences.h"
#include "runtime/sampling/sampler_chain.h"
#include "runtime/sampling/stop_criterion.h"
#include "runtime/tokenizer/tokenizer.h"
#include "runtime/util/status.h"

namespace lmrt {

struct EngineParams {
  uint32_t max_sequences = 4;  // requests decoding at once, 1..LlamaGraph::kMaxLogitRows
  // Prompt tokens of one request per step; a prompt's last chunk also takes a rest of fewer than
  // LlamaGraph::kMinTiledRun tokens (StepPlanner) rather than leave it a step of its own.
  uint32_t prefill_chunk = 64;
  // A prompt starts from the longest prefix the arena holds (SequencePool); finished requests'
  // sequences stay as cached prefixes, at most retained_sequences (0..kMaxRetained) of them.
  bool prefix_reuse = true;
  uint32_t retained_sequences = 4;
  static constexpr uint32_t kMaxRetained = 16;
};

// Told once that a request finished (whatever the reason), on the stepping thread after the
// request's last piece, so that a waiting thread needs no polling.
struct FinishSink {
  void (*fn)(void* user, uint64_t id, FinishReason why) = nullptr;
  void* user = nullptr;
};

// A request handed to the engine, with what it owns: the chain and stop criteria that req points to.
struct EngineRequest {
  GenerateRequest req;
  std::unique_ptr<SamplerChain> chain;  // req.sampler, or null (greedy)
  std::vector<std::unique_ptr<StopCriterion>> criteria;
  TokenSink sink;
  FinishSink on_finish;
  // The response cache (cache null: none), with generate_cached's key and rules: a cacheable
  // request is looked up at submit and, on a hit, replayed at the next step without a sequence; a
  // miss that finishes by eos, stop or length is stored (context_full depends on the other
  // requests, cancelled and failed ones are not answers).
  CacheUse cache;
  std::shared_ptr<void> sink_owner;  // what sink.user points to, kept alive as long as the request
};

class BatchEngine {
 public:
  enum class State { queued, prefilling, decoding, done };

  // The engine uses ctx's arena, graph and threads while it lives; the context forgets the tokens it
  // held, and must not evaluate anything itself meanwhile. Errors: invalid_argument (max_sequences
  // outside 1..16, prefill_chunk 0, retained_sequences above kMaxRetained), out_of_memory.
  static Status create(Context& ctx, const Tokenizer& tok, const EngineParams& params,
                       std::unique_ptr<BatchEngine>* out);
  ~BatchEngine();

  // Queues a request; *id names it from now on (ids start at 1). Errors: invalid_argument and
  // bad_utf8 as generate(); context_full (the prompt alone is larger than the arena). context_shift
  // is refused (a shared arena cannot shift one sequence).
  Status submit(EngineRequest request, uint64_t* id);
  // Marks a request cancelled: it finishes with FinishReason::cancelled at the next step. Errors:
  // invalid_argument (unknown id). A finished request stays as it is.
  Status cancel(uint64_t id);

  // One forward pass over the next tokens of every running request (admitting queued ones first);
  // *busy becomes false when no request is left to run. A request's own failure (a plugin's) ends
  // that request with FinishReason::error and its status; the step goes on for the others.
  Status step(bool* busy);
  // Steps until every request has finished.
  Status run();

  // A request's state, result and status (its own failure). Errors: invalid_argument (unknown id).
  Status state(uint64_t id, State* out) const;
  const GenerateResult* result(uint64_t id) const;
  // What the response cache did for a request (nothing without one). Null for an unknown id.
  const CacheOutcome* cache_outcome(uint64_t id) const;
  Status request_status(uint64_t id) const;
  // Forgets a finished request (its result goes). Errors: invalid_argument (unknown or unfinished).
  Status release(uint64_t id);

  uint32_t n_running() const;
  uint32_t n_queued() const;
  const KvSequences& sequences() const { return seqs_; }
  // Finished requests' sequences kept as cached prefixes, and forgetting them (their cells go back).
  uint32_t n_cached() const { return pool_.n_cached(); }
  const EngineParams& params() const { return params_; }
  void drop_cached() { pool_.drop_cached(); }
  // Called with a request's id as it finishes, before its own FinishSink (EngineThread keeps its
  // finish table with it, so that a notified thread finds the request finished).
  void observe_finishes(std::function<void(uint64_t id)> fn) { finish_observer_ = std::move(fn); }

 private:
  using Clock = std::chrono::steady_clock;
  struct Job {
    uint64_t id = 0;
    EngineRequest request;
    std::vector<int32_t> prompt;
    State state = State::queued;
    bool cancel = false;
    Status status;
    uint32_t seq = 0;          // its sequence (lane) while prefilling or decoding
    uint32_t n_evaluated = 0;  // prompt tokens evaluated
    int32_t pending = 0;       // the sampled token to evaluate next (decoding)
    SequenceDecoder decoder;
    GenerateResult result;
    CacheOutcome cache;
    CacheKey key;                         // when cache.consulted
    std::unique_ptr<CachedResponse> hit;  // a cache hit waiting to be replayed
    Clock::time_point t_submit{}, t_admit{};
  };

  BatchEngine(Context& ctx, const Tokenizer& tok, const EngineParams& p);
  Job* find(uint64_t id) const;
  void admit();
  void end(Job& job, FinishReason why);
  void fail(Job& job, Status why);
  // Every way a request finishes ends here: it is done, and its FinishSink hears of it once.
  void finished(Job& job);
  void release_sequence(Job& job);
  // The response cache's part: looking a new request up, replaying a hit, storing an answer.
  void look_up(Job& job);
  void replay(Job& job);
  void store(Job& job);

  Context& ctx_;
  const Tokenizer& tok_;
  EngineParams params_;
  KvSequences seqs_;
  SequencePool pool_;
  StepPlanner planner_;
  std::function<void(uint64_t)> finish_observer_;
  uint64_t next_id_ = 1;
  std::vector<std::unique_ptr<Job>> jobs_;  // in submission order
  std::vector<Job*> lanes_;                 // per sequence id: its job, or null (free or cached)
  std::vector<StepPlanner::Lane> lane_work_;
  // The step's batch, reserved to n_batch tokens.
  std::vector<int32_t> tokens_;
  std::vector<uint32_t> pos_, slot_, logit_rows_;
  std::vector<AttentionView> views_;
  std::vector<Job*> samplers_;  // the job of each logit row
};

}  // namespace lmrt
