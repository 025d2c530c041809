#include "runtime/engine/batch_engine.h"

#include <algorithm>

#include "runtime/kv/kv_arena.h"

namespace lmrt {

namespace {

double ms_since(std::chrono::steady_clock::time_point a) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count();
}

uint32_t n_slots(const EngineParams& p) { return p.max_sequences + (p.prefix_reuse ? p.retained_sequences : 0); }

SequencePool::Options pool_options(const EngineParams& p) {
  SequencePool::Options o;
  o.reuse = p.prefix_reuse;
  o.retained = p.retained_sequences;
  // Waiting for a running prompt costs no more steps than computing its tokens oneself (both go at
  // most prefill_chunk a step), and computes them once.
  o.wait_gain = 1;
  return o;
}

}  // namespace

BatchEngine::BatchEngine(Context& ctx, const Tokenizer& tok, const EngineParams& p)
    : ctx_(ctx),
      tok_(tok),
      params_(p),
      seqs_(ctx.n_ctx(), n_slots(p)),
      pool_(seqs_, pool_options(p)),
      planner_(n_slots(p), ctx.params().n_batch, p.prefill_chunk, LlamaGraph::kMinTiledRun),
      lanes_(n_slots(p), nullptr),
      lane_work_(n_slots(p)) {
  const size_t nb = ctx.params().n_batch;
  tokens_.resize(nb);
  pos_.resize(nb);
  slot_.resize(nb);
  views_.resize(nb);
  logit_rows_.resize(p.max_sequences);
  samplers_.resize(p.max_sequences);
}

Status BatchEngine::create(Context& ctx, const Tokenizer& tok, const EngineParams& params,
                           std::unique_ptr<BatchEngine>* out) {
  if (params.max_sequences < 1 || params.max_sequences > LlamaGraph::kMaxLogitRows)
    return Error(Code::invalid_argument, "max_sequences must be 1 to " + std::to_string(LlamaGraph::kMaxLogitRows));
  if (params.prefill_chunk < 1) return Error(Code::invalid_argument, "prefill_chunk must be at least 1");
  if (params.retained_sequences > EngineParams::kMaxRetained)
    return Error(Code::invalid_argument,
                 "retained_sequences must be at most " + std::to_string(EngineParams::kMaxRetained));
  // Shared prefixes leave sequences in more than one run of cells: attention gathers them (exactly).
  LMRT_RETURN_IF_ERROR(ctx.reserve_scattered_views());
  ctx.truncate(0);  // the engine writes the arena's cells; the context's own tokens are gone
  out->reset(new BatchEngine(ctx, tok, params));
  return Status::Ok();
}

BatchEngine::~BatchEngine() { ctx_.truncate(0); }

BatchEngine::Job* BatchEngine::find(uint64_t id) const {
  for (const auto& j : jobs_)
    if (j->id == id) return j.get();
  return nullptr;
}

Status BatchEngine::submit(EngineRequest request, uint64_t* id) {
  LMRT_RETURN_IF_ERROR(SequenceDecoder::validate(request.req));
  if (request.req.context_shift)
    return Error(Code::invalid_argument, "context shift does not apply to a sequence of a shared arena");
  auto job = std::make_unique<Job>();
  job->t_submit = Clock::now();
  LMRT_RETURN_IF_ERROR(tokenize_prompt(tok_, request.req, &job->prompt));
  if (job->prompt.size() > ctx_.n_ctx())
    return Error(Code::context_full, "the prompt has " + std::to_string(job->prompt.size()) +
                                         " tokens but the arena holds only " + std::to_string(ctx_.n_ctx()));
  job->request = std::move(request);
  job->request.req.prompt = {};  // tokenized: the caller's text need not outlive submit()
  job->request.req.sampler = job->request.chain.get();
  job->request.req.stop_criteria.clear();
  for (const auto& c : job->request.criteria) job->request.req.stop_criteria.push_back(c.get());
  look_up(*job);
  job->id = next_id_++;
  *id = job->id;
  jobs_.push_back(std::move(job));
  return Status::Ok();
}

Status BatchEngine::cancel(uint64_t id) {
  Job* j = find(id);
  if (j == nullptr) return Error(Code::invalid_argument, "no request " + std::to_string(id));
  j->cancel = true;
  return Status::Ok();
}

void BatchEngine::look_up(Job& job) {
  const CacheUse& use = job.request.cache;
  if (use.cache == nullptr || !cacheable(job.request.req, use)) return;
  const auto t0 = Clock::now();
  if (Status s =
          request_cache_key(job.request.req, use, job.prompt, ctx_.n_ctx(), kv_type_name(ctx_.kv().type()), &job.key);
      !s.ok()) {
    job.cache.warning = s.message();
    return;
  }
  job.cache.consulted = true;
  auto cached = std::make_unique<CachedResponse>();
  bool hit = false;
  if (Status s = use.cache->lookup(job.key, cached.get(), &hit); !s.ok()) job.cache.warning = s.message();
  if (hit) job.hit = std::move(cached);
  job.cache.lookup_ms = ms_since(t0);
}

void BatchEngine::replay(Job& job) {
  const auto t0 = Clock::now();
  job.cache.hit = true;
  (void)replay_cached(*job.hit, job.request.sink, &job.result);
  job.hit.reset();
  job.cache.lookup_ms += ms_since(t0);
  job.result.timings.ttft_ms = ms_since(job.t_submit);
  finished(job);
}

void BatchEngine::store(Job& job) {
  const FinishReason why = job.result.finish_reason;
  if (!job.cache.consulted || job.cache.hit ||
      (why != FinishReason::eos && why != FinishReason::stop && why != FinishReason::length))
    return;
  if (Status s = job.request.cache.cache->store(job.key, to_cached(job.result)); !s.ok())
    job.cache.warning = s.message();
}

void BatchEngine::release_sequence(Job& job) {
  lanes_[job.seq] = nullptr;
  pool_.release(job.seq);
}

void BatchEngine::end(Job& job, FinishReason why) {
  if (job.state == State::prefilling || job.state == State::decoding) {
    job.decoder.finish(why);
    release_sequence(job);
  } else {
    job.result.finish_reason = why;
  }
  finished(job);
}

void BatchEngine::fail(Job& job, Status why) {
  job.status = std::move(why);
  if (job.state == State::prefilling || job.state == State::decoding) release_sequence(job);
  job.result.finish_reason = FinishReason::error;
  finished(job);
}

void BatchEngine::finished(Job& job) {
  job.state = State::done;
  if (finish_observer_) finish_observer_(job.id);
  const FinishSink& f = job.request.on_finish;
  if (f.fn != nullptr) f.fn(f.user, job.id, job.result.finish_reason);
}

void BatchEngine::admit() {
  // First come, first served: a prompt that cannot start yet (no free sequence or cells, or a running
  // prompt is computing its prefix) waits, and so do the requests behind it.
  for (const auto& jp : jobs_) {
    Job& job = *jp;
    if (job.state != State::queued) continue;
    if (n_running() == params_.max_sequences) break;
    uint32_t seq = 0, reused = 0;
    if (pool_.acquire(job.prompt, &seq, &reused) == SequencePool::Outcome::wait) break;
    job.seq = seq;
    job.t_admit = Clock::now();
    Status s =
        job.decoder.start(tok_, job.request.req, job.prompt, ctx_.n_ctx(), job.request.sink, &job.result, job.t_submit);
    if (!s.ok()) {
      pool_.release(seq);
      fail(job, std::move(s));
      continue;
    }
    job.result.reused_tokens = reused;
    job.n_evaluated = reused;
    job.state = State::prefilling;
    lanes_[seq] = &job;
  }
}

Status BatchEngine::step(bool* busy) {
  for (const auto& jp : jobs_) {
    if (jp->cancel && jp->state != State::done) end(*jp, FinishReason::cancelled);
    if (jp->hit != nullptr && jp->state == State::queued) replay(*jp);  // needs no sequence
  }
  admit();
  for (uint32_t i = 0; i < lanes_.size(); ++i) {
    const Job* j = lanes_[i];
    lane_work_[i].decoding = j != nullptr && j->state == State::decoding;
    lane_work_[i].prompt_left =
        j != nullptr && j->state == State::prefilling ? static_cast<uint32_t>(j->prompt.size()) - j->n_evaluated : 0;
  }
  const std::vector<StepPlanner::Take>& takes = planner_.plan(lane_work_);

  uint32_t n = 0, n_rows = 0;
  auto add = [&](Job& job, int32_t token, uint32_t p) {
    const uint32_t* cells = seqs_.cells(job.seq);
    tokens_[n] = token;
    pos_[n] = p;
    slot_[n] = cells[p];
    views_[n] = AttentionView{cells, p + 1, seqs_.contiguous(job.seq)};
    ++n;
  };
  for (const StepPlanner::Take& take : takes) {
    Job& job = *lanes_[take.lane];
    if (job.state == State::decoding) {
      // Cached prefixes give their cells first; with none left the arena is full: this request
      // ends, the others go on.
      if (!pool_.make_room(1) || !seqs_.grow(job.seq, 1).ok()) {
        end(job, FinishReason::context_full);
        continue;
      }
      add(job, job.pending, seqs_.length(job.seq) - 1);
      pool_.token_ready(job.seq, job.pending);
    } else {
      for (uint32_t k = 0; k < take.n; ++k) add(job, job.prompt[job.n_evaluated + k], job.n_evaluated + k);
      job.n_evaluated += take.n;
      pool_.prompt_ready(job.seq, job.n_evaluated);
      if (job.n_evaluated < job.prompt.size()) continue;
    }
    logit_rows_[n_rows] = n - 1;
    samplers_[n_rows++] = &job;
  }
  if (n > 0) {
    GraphBatch b;
    b.tokens = tokens_.data();
    b.n = n;
    b.pos = pos_.data();
    b.slot = slot_.data();
    b.views = views_.data();
    b.logit_rows = logit_rows_.data();
    b.n_logit_rows = n_rows;
    LMRT_RETURN_IF_ERROR(ctx_.eval_sequences(b));
  }
  for (uint32_t i = 0; i < n_rows; ++i) {
    Job& job = *samplers_[i];
    if (job.state == State::prefilling) {
      job.result.timings.prefill_ms = ms_since(job.t_admit);
      if (job.result.timings.prefill_ms > 0)
        job.result.timings.prefill_tokens_per_s =
            (job.prompt.size() - job.result.reused_tokens) * 1000.0 / job.result.timings.prefill_ms;
      job.state = State::decoding;
    }
    int32_t next = 0;
    bool done = false;
    Status s = job.decoder.step(ctx_.batch_logits(i), &next, &done);
    if (!s.ok()) {
      fail(job, std::move(s));
    } else if (done) {
      release_sequence(job);
      store(job);
      finished(job);
    } else {
      job.pending = next;
    }
  }
  *busy = n_running() + n_queued() > 0;
  return Status::Ok();
}

Status BatchEngine::run() {
  bool busy = true;
  while (busy) LMRT_RETURN_IF_ERROR(step(&busy));
  return Status::Ok();
}

Status BatchEngine::state(uint64_t id, State* out) const {
  const Job* j = find(id);
  if (j == nullptr) return Error(Code::invalid_argument, "no request " + std::to_string(id));
  *out = j->state;
  return Status::Ok();
}

const GenerateResult* BatchEngine::result(uint64_t id) const {
  const Job* j = find(id);
  return j == nullptr ? nullptr : &j->result;
}

const CacheOutcome* BatchEngine::cache_outcome(uint64_t id) const {
  const Job* j = find(id);
  return j == nullptr ? nullptr : &j->cache;
}

Status BatchEngine::request_status(uint64_t id) const {
  const Job* j = find(id);
  if (j == nullptr) return Error(Code::invalid_argument, "no request " + std::to_string(id));
  return j->status;
}

Status BatchEngine::release(uint64_t id) {
  for (auto it = jobs_.begin(); it != jobs_.end(); ++it) {
    if ((*it)->id != id) continue;
    if ((*it)->state != State::done)
      return Error(Code::invalid_argument, "request " + std::to_string(id) + " has not finished");
    jobs_.erase(it);
    return Status::Ok();
  }
  return Error(Code::invalid_argument, "no request " + std::to_string(id));
}

uint32_t BatchEngine::n_running() const { return pool_.n_running(); }

uint32_t BatchEngine::n_queued() const {
  uint32_t q = 0;
  for (const auto& j : jobs_) q += j->state == State::queued;
  return q;
}

}  // namespace lmrt
