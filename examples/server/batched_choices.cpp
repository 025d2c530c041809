#include "batched_choices.h"

#include <algorithm>
#include <iterator>

namespace server {
namespace {

// Entries a request's handoff holds before pieces merge: a client that reads 64 pieces behind
// still gets them one by one.
constexpr size_t kHandoffEntries = 64;
// How long the request's thread sleeps for a piece or a finish before it looks at the client and
// the deadline (finishes wake it: they come through the handoff).
constexpr std::chrono::milliseconds kQuiet(50);
constexpr int kQuietsPerCheck = 20;  // of the engine's health, when nothing came for that long

struct CallbackState {
  PieceHandoff* handoff;
  int index;
  bool want_logprobs;
};

// On the engine's thread: copy the piece out and return at once.
int hand_off(void* user, const lmrt_token_event* ev) {
  auto* st = static_cast<CallbackState*>(user);
  try {
    st->handoff->push(st->index, piece_from_event(*ev, st->want_logprobs));
    return 0;
  } catch (...) {  // out of memory: this choice cancels, nothing crosses the C library
    return 1;
  }
}

bool engine_running(lmrt_engine* engine) {
  lmrt_engine_stats st{};
  st.struct_size = sizeof st;
  return lmrt_engine_get_stats(engine, &st) == LMRT_OK && st.started != 0;
}

ChoiceResult failure(lmrt_status status, std::string message) {
  ChoiceResult r;
  r.status = status;
  r.error = std::move(message);
  return r;
}

}  // namespace

void notice_finish(void* user_data, uint64_t, lmrt_finish_reason) {
  auto* st = static_cast<CallbackState*>(user_data);
  if (st == nullptr) return;  // a request submitted without a handoff
  try {
    st->handoff->push_finished(st->index);
  } catch (...) {  // out of memory: the request's thread finds it by the engine's health check
  }
}

void PieceHandoff::push_finished(int index) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    entries_.push_back(Entry{index, Piece{}, true});
  }
  ready_.notify_one();
}

void PieceHandoff::push(int index, Piece piece) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (entries_.size() >= capacity_) {
      auto same = std::find_if(entries_.rbegin(), entries_.rend(),
                               [&](const Entry& e) { return e.index == index && !e.finished; });
      if (same != entries_.rend()) {
        same->piece.text += piece.text;
        std::move(piece.logprobs.begin(), piece.logprobs.end(), std::back_inserter(same->piece.logprobs));
        return;  // the consumer is already awake for that entry
      }
    }
    entries_.push_back(Entry{index, std::move(piece)});
  }
  ready_.notify_one();
}

bool PieceHandoff::take(std::vector<Entry>* out, std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> lock(mu_);
  if (wait.count() > 0) ready_.wait_for(lock, wait, [&] { return !entries_.empty(); });
  if (entries_.empty()) return false;
  std::move(entries_.begin(), entries_.end(), std::back_inserter(*out));
  entries_.clear();
  return true;
}

size_t PieceHandoff::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

bool run_batched_choices(const BatchedRun& run, const std::vector<ChoiceTask>& tasks, const SamplingParams& p) {
  PieceHandoff handoff(kHandoffEntries);
  std::vector<CallbackState> states(tasks.size());
  std::vector<uint64_t> ids(tasks.size(), 0);  // 0: not submitted, or released
  bool go_on = true;                           // false once stopped, failed or cancelled
  bool stopped = false;                        // by should_stop or a callback
  auto deliver = [&](int index, ChoiceResult&& r) {
    const bool ok = r.status == LMRT_OK;
    if (!run.on_done(index, std::move(r))) stopped = true;
    if (!ok || stopped) go_on = false;  // one failed choice fails the request: the others need not run
  };
  for (size_t i = 0; i < tasks.size() && go_on; ++i) {
    states[i] = CallbackState{&handoff, tasks[i].index, p.logprobs >= 0};
    std::vector<const char*> stops;
    lmrt_generate_request req = make_choice_request(*tasks[i].prompt, p, tasks[i].seed_offset, &stops);
    // As on a context of its own: the prompt and the generated tokens share n_ctx cells (an arena
    // shared by many requests would otherwise let one run past what the model was sized for).
    const size_t room = run.n_ctx > tasks[i].prompt->size() ? run.n_ctx - tasks[i].prompt->size() : 1;
    req.max_tokens = static_cast<int32_t>(std::min<size_t>(static_cast<size_t>(req.max_tokens), room));
    const lmrt_status st = lmrt_engine_submit(run.engine, &req, hand_off, &states[i], &ids[i]);
    if (st != LMRT_OK) {
      ids[i] = 0;
      deliver(tasks[i].index, failure(st, lmrt_engine_last_error(run.engine)));
    }
  }
  size_t n_left = static_cast<size_t>(std::count_if(ids.begin(), ids.end(), [](uint64_t id) { return id != 0; }));
  std::vector<PieceHandoff::Entry> entries;
  int quiet = 0;
  auto finish = [&](int index) {
    const size_t i = static_cast<size_t>(
        std::find_if(tasks.begin(), tasks.end(), [&](const ChoiceTask& t) { return t.index == index; }) -
        tasks.begin());
    if (i == tasks.size() || ids[i] == 0) return;
    lmrt_generate_result res{};
    res.struct_size = sizeof res;
    const lmrt_status st = lmrt_engine_result(run.engine, ids[i], &res);
    ChoiceResult r = choice_from_result(res);
    if (st != LMRT_OK) r = failure(st, lmrt_engine_last_error(run.engine));
    (void)lmrt_engine_release(run.engine, ids[i]);
    ids[i] = 0;
    --n_left;
    if (go_on) deliver(index, std::move(r));
  };
  while (go_on && n_left > 0) {
    entries.clear();
    const bool any = handoff.take(&entries, kQuiet);
    // In the engine's order: a choice's pieces, then its finish.
    for (PieceHandoff::Entry& e : entries) {
      if (e.finished) {
        finish(e.index);
      } else if (go_on && !run.on_piece(e.index, e.piece)) {
        stopped = true, go_on = false;
      }
    }
    if (go_on && n_left > 0 && run.should_stop()) stopped = true, go_on = false;
    // A quiet second: is the engine still there? (A thread that stopped on a failure finishes
    // nothing any more.)
    quiet = any ? 0 : quiet + 1;
    if (go_on && n_left > 0 && quiet % kQuietsPerCheck == 0 && quiet > 0 && !engine_running(run.engine)) {
      const size_t first =
          static_cast<size_t>(std::find_if(ids.begin(), ids.end(), [](uint64_t id) { return id != 0; }) - ids.begin());
      deliver(tasks[first].index, failure(LMRT_ERR_INTERNAL, "the batch engine stopped"));
    }
  }
  // Cancel what is left and wait until the engine is done with it: the handoff and the callback
  // states live on this stack. A stopped engine calls nobody back any more. on_done still sees
  // the cancelled ones (what they generated counts); its answer no longer matters.
  for (uint64_t id : ids)
    if (id != 0) (void)lmrt_engine_cancel(run.engine, id);
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] == 0) continue;
    int fin = 0;
    if (lmrt_engine_wait(run.engine, ids[i], -1, &fin) != LMRT_OK || fin == 0) continue;
    lmrt_generate_result res{};
    res.struct_size = sizeof res;
    if (lmrt_engine_result(run.engine, ids[i], &res) == LMRT_OK && res.finish_reason == LMRT_FINISH_CANCELLED)
      (void)run.on_done(tasks[i].index, choice_from_result(res));
    (void)lmrt_engine_release(run.engine, ids[i]);
  }
  return !stopped;
}

}  // namespace server
