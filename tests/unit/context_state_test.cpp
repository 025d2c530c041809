// Saved context state through the C API: a context that loads another's state goes on with the same
// logits bits and greedy tokens as the one that evaluated the tokens itself; every refusal (another
// model, KV type, too small n_ctx, truncated or damaged blobs) leaves the loading context unchanged;
// the file variant never replaces a file that is not a state.
#include <gtest/gtest.h>
#include <lmrt/lmrt.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "c_api_fixture.h"
#include "test_support.h"

namespace {

using lmrt::test::ContextPtr;
using lmrt::test::ModelPtr;

// The first n ids of the quant folder's id list (valid in every 512-token vocabulary used here).
std::vector<int32_t> reference_ids(size_t n) {
  std::istringstream in(lmrt::test::read_file(lmrt::test::shared_dir() + "/models/quant/ids.txt"));
  std::vector<int32_t> ids;
  int32_t id = 0;
  while (ids.size() < n && in >> id) ids.push_back(id);
  EXPECT_EQ(ids.size(), n);
  return ids;
}

ContextPtr context(lmrt_model* m, uint32_t n_ctx, uint32_t kv_type = LMRT_KV_F16) {
  lmrt_context_params p;
  lmrt_context_params_init(&p);
  p.n_ctx = n_ctx;
  p.n_threads = 2;
  p.kv_type = kv_type;
  lmrt_context* c = nullptr;
  char err[256] = {0};
  EXPECT_EQ(lmrt_context_create(m, &p, &c, err, sizeof err), LMRT_OK) << err;
  return ContextPtr(c);
}

std::vector<uint8_t> save(lmrt_context* c) {
  size_t size = 0;
  EXPECT_EQ(lmrt_context_state_size(c, &size), LMRT_OK);
  std::vector<uint8_t> blob(size);
  size_t written = 0;
  EXPECT_EQ(lmrt_context_state_save(c, blob.data(), blob.size(), &written), LMRT_OK) << lmrt_context_last_error(c);
  EXPECT_EQ(written, size);
  return blob;
}

// The raw bits of the logits after evaluating `token` next.
std::vector<uint32_t> next_logits(lmrt_context* c, int32_t token) {
  EXPECT_EQ(lmrt_eval(c, &token, 1), LMRT_OK) << lmrt_context_last_error(c);
  const float* logits = nullptr;
  size_t n_vocab = 0;
  EXPECT_EQ(lmrt_get_logits(c, 0, &logits, &n_vocab), LMRT_OK) << lmrt_context_last_error(c);
  std::vector<uint32_t> bits(n_vocab);
  if (logits != nullptr) std::memcpy(bits.data(), logits, n_vocab * sizeof(float));
  return bits;
}

struct Completion {
  std::vector<int32_t> tokens;
  uint32_t reused = 0;
};

Completion greedy(lmrt_context* c, const std::vector<int32_t>& prompt, int32_t n) {
  lmrt_generate_request r;
  lmrt_generate_request_init(&r);
  r.prompt_tokens = prompt.data();
  r.n_prompt_tokens = prompt.size();
  r.max_tokens = n;
  lmrt_generate_result res;
  res.struct_size = sizeof res;
  EXPECT_EQ(lmrt_generate(c, &r, nullptr, nullptr, &res), LMRT_OK) << lmrt_context_last_error(c);
  return {std::vector<int32_t>(res.tokens, res.tokens + res.completion_tokens), res.reused_tokens};
}

class ContextStateModels : public ::testing::TestWithParam<const char*> {};

TEST_P(ContextStateModels, LoadedContextContinuesWithTheSameLogitsBitsAndTokens) {
  ModelPtr m = lmrt::test::open_shared_model(GetParam());
  ASSERT_NE(m, nullptr);
  const std::vector<int32_t> ids = reference_ids(40);
  const std::vector<int32_t> prefix(ids.begin(), ids.begin() + 24);

  ContextPtr a = context(m.get(), 128);
  ASSERT_EQ(lmrt_eval(a.get(), prefix.data(), prefix.size()), LMRT_OK);
  const std::vector<uint8_t> blob = save(a.get());

  ContextPtr b = context(m.get(), 96);  // another n_ctx is fine while the tokens fit
  ASSERT_EQ(lmrt_context_state_load(b.get(), blob.data(), blob.size()), LMRT_OK) << lmrt_context_last_error(b.get());
  uint32_t n_past = 0;
  ASSERT_EQ(lmrt_context_n_past(b.get(), &n_past), LMRT_OK);
  EXPECT_EQ(n_past, prefix.size());
  // Nothing was evaluated after the load: there are no logits to read yet.
  const float* none = nullptr;
  EXPECT_EQ(lmrt_get_logits(b.get(), 0, &none, nullptr), LMRT_ERR_INVALID_ARGUMENT);

  EXPECT_EQ(next_logits(a.get(), ids[24]), next_logits(b.get(), ids[24]));
  // lmrt_generate reuses the loaded tokens, prefills the rest and decodes the same greedy tokens.
  const std::vector<int32_t> prompt(ids.begin(), ids.end());
  const Completion ca = greedy(a.get(), prompt, 24);
  const Completion cb = greedy(b.get(), prompt, 24);
  EXPECT_EQ(cb.reused, 25u);
  EXPECT_EQ(ca.reused, cb.reused);
  ASSERT_EQ(ca.tokens.size(), 24u);
  EXPECT_EQ(ca.tokens, cb.tokens);

  // The state of the longer context round-trips too, and saving it again gives the same bytes.
  const std::vector<uint8_t> later = save(a.get());
  ContextPtr c = context(m.get(), 128);
  ASSERT_EQ(lmrt_context_state_load(c.get(), later.data(), later.size()), LMRT_OK);
  EXPECT_EQ(save(c.get()), later);
}

INSTANTIATE_TEST_SUITE_P(Models, ContextStateModels,
                         ::testing::Values("stories260K.gguf", "quant/base-Q4_K_M.gguf", "quant/base-Q6_K.gguf"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

TEST(ContextState, EmptyContextRoundTrips) {
  ModelPtr m = lmrt::test::open_shared_model("stories260K.gguf");
  ASSERT_NE(m, nullptr);
  ContextPtr a = context(m.get(), 64);
  const std::vector<uint8_t> blob = save(a.get());
  ContextPtr b = context(m.get(), 64);
  const std::vector<int32_t> ids = reference_ids(3);
  ASSERT_EQ(lmrt_eval(b.get(), ids.data(), ids.size()), LMRT_OK);
  ASSERT_EQ(lmrt_context_state_load(b.get(), blob.data(), blob.size()), LMRT_OK);
  uint32_t n_past = 99;
  ASSERT_EQ(lmrt_context_n_past(b.get(), &n_past), LMRT_OK);
  EXPECT_EQ(n_past, 0u);
}

TEST(ContextState, SmallBufferGetsTheSize) {
  ModelPtr m = lmrt::test::open_shared_model("stories260K.gguf");
  ASSERT_NE(m, nullptr);
  ContextPtr a = context(m.get(), 64);
  const std::vector<int32_t> ids = reference_ids(5);
  ASSERT_EQ(lmrt_eval(a.get(), ids.data(), ids.size()), LMRT_OK);
  size_t size = 0, written = 0;
  ASSERT_EQ(lmrt_context_state_size(a.get(), &size), LMRT_OK);
  EXPECT_EQ(lmrt_context_state_save(a.get(), nullptr, 0, &written), LMRT_ERR_BUFFER_TOO_SMALL);
  EXPECT_EQ(written, size);
  std::vector<uint8_t> small(size - 1);
  EXPECT_EQ(lmrt_context_state_save(a.get(), small.data(), small.size(), &written), LMRT_ERR_BUFFER_TOO_SMALL);
  EXPECT_EQ(written, size);
  EXPECT_EQ(lmrt_context_state_save(a.get(), small.data(), small.size(), nullptr), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(lmrt_context_state_load(a.get(), nullptr, 10), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(lmrt_context_state_size(nullptr, &size), LMRT_ERR_INVALID_ARGUMENT);
}

// A context holding `held` whose refused loads must leave it as a twin that never saw them.
class Unchanged {
 public:
  Unchanged(lmrt_model* m, const std::vector<int32_t>& held) : ctx_(context(m, 64)), twin_(context(m, 64)) {
    EXPECT_EQ(lmrt_eval(ctx_.get(), held.data(), held.size()), LMRT_OK);
    EXPECT_EQ(lmrt_eval(twin_.get(), held.data(), held.size()), LMRT_OK);
  }
  lmrt_context* get() { return ctx_.get(); }
  void expect_unchanged(int32_t next) {
    uint32_t a = 0, b = 0;
    ASSERT_EQ(lmrt_context_n_past(ctx_.get(), &a), LMRT_OK);
    ASSERT_EQ(lmrt_context_n_past(twin_.get(), &b), LMRT_OK);
    EXPECT_EQ(a, b);
    EXPECT_EQ(next_logits(ctx_.get(), next), next_logits(twin_.get(), next));
  }

 private:
  ContextPtr ctx_, twin_;
};

TEST(ContextState, RefusalsLeaveTheContextUnchanged) {
  ModelPtr stories = lmrt::test::open_shared_model("stories260K.gguf");
  ModelPtr quant = lmrt::test::open_shared_model("quant/base-Q4_K_M.gguf");
  ASSERT_NE(stories, nullptr);
  ASSERT_NE(quant, nullptr);
  const std::vector<int32_t> ids = reference_ids(30);
  const std::vector<int32_t> held(ids.begin(), ids.begin() + 7);
  const std::vector<int32_t> saved(ids.begin() + 7, ids.begin() + 27);

  ContextPtr source = context(stories.get(), 64);
  ASSERT_EQ(lmrt_eval(source.get(), saved.data(), saved.size()), LMRT_OK);
  const std::vector<uint8_t> blob = save(source.get());
  ContextPtr other_source = context(quant.get(), 64);
  ASSERT_EQ(lmrt_eval(other_source.get(), saved.data(), saved.size()), LMRT_OK);
  const std::vector<uint8_t> other_model = save(other_source.get());

  Unchanged u(stories.get(), held);
  EXPECT_EQ(lmrt_context_state_load(u.get(), other_model.data(), other_model.size()), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(lmrt_context_last_error(u.get())).find("another model"), std::string::npos);

  ContextPtr f32 = context(stories.get(), 64, LMRT_KV_F32);
  EXPECT_EQ(lmrt_context_state_load(f32.get(), blob.data(), blob.size()), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(lmrt_context_last_error(f32.get())).find("F16"), std::string::npos);

  ContextPtr tiny = context(stories.get(), 16);
  EXPECT_EQ(lmrt_context_state_load(tiny.get(), blob.data(), blob.size()), LMRT_ERR_CONTEXT_FULL);

  // Every truncation is a clean BAD_FORMAT.
  for (size_t n = 0; n < blob.size(); ++n)
    ASSERT_EQ(lmrt_context_state_load(u.get(), blob.data(), n), LMRT_ERR_BAD_FORMAT) << "truncated to " << n;
  std::vector<uint8_t> longer = blob;
  longer.push_back(0);
  EXPECT_EQ(lmrt_context_state_load(u.get(), longer.data(), longer.size()), LMRT_ERR_BAD_FORMAT);
  // A flipped bit anywhere is refused (the checksum, or a header check before it).
  for (size_t at = 0; at < blob.size(); at += 13) {
    std::vector<uint8_t> bad = blob;
    bad[at] ^= 0x10;
    ASSERT_NE(lmrt_context_state_load(u.get(), bad.data(), bad.size()), LMRT_OK) << "bit flipped at " << at;
  }
  std::vector<uint8_t> newer = blob;
  newer[8] = 2;  // format version 2
  EXPECT_EQ(lmrt_context_state_load(u.get(), newer.data(), newer.size()), LMRT_ERR_UNSUPPORTED);
  u.expect_unchanged(ids[29]);
}

TEST(ContextState, FilesAreWrittenWholeAndNeverOverAForeignFile) {
  ModelPtr m = lmrt::test::open_shared_model("stories260K.gguf");
  ASSERT_NE(m, nullptr);
  const std::vector<int32_t> ids = reference_ids(20);
  ContextPtr a = context(m.get(), 64);
  ASSERT_EQ(lmrt_eval(a.get(), ids.data(), 12), LMRT_OK);

  const std::string path = lmrt::test::write_temp_file("state.lmrtstate", "");
  ::unlink(path.c_str());
  ASSERT_EQ(lmrt_context_state_save_file(a.get(), path.c_str()), LMRT_OK) << lmrt_context_last_error(a.get());
  EXPECT_EQ(::access((path + ".tmp").c_str(), F_OK), -1);
  const std::string bytes = lmrt::test::read_file(path);
  const std::vector<uint8_t> blob = save(a.get());
  EXPECT_EQ(bytes, std::string(blob.begin(), blob.end()));

  ContextPtr b = context(m.get(), 64);
  ASSERT_EQ(lmrt_context_state_load_file(b.get(), path.c_str()), LMRT_OK) << lmrt_context_last_error(b.get());
  EXPECT_EQ(next_logits(a.get(), ids[12]), next_logits(b.get(), ids[12]));
  // A state file is replaced by a newer state.
  ASSERT_EQ(lmrt_context_state_save_file(a.get(), path.c_str()), LMRT_OK);
  const std::vector<uint8_t> newer = save(a.get());  // one more token
  EXPECT_EQ(lmrt::test::read_file(path), std::string(newer.begin(), newer.end()));

  const std::string foreign = lmrt::test::write_temp_file("notes.txt", "my notes");
  EXPECT_EQ(lmrt_context_state_save_file(a.get(), foreign.c_str()), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(lmrt::test::read_file(foreign), "my notes");
  EXPECT_EQ(lmrt_context_state_load_file(b.get(), foreign.c_str()), LMRT_ERR_BAD_FORMAT);
  const std::string dir = lmrt::test::shared_dir();
  EXPECT_EQ(lmrt_context_state_save_file(a.get(), dir.c_str()), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(lmrt_context_state_load_file(b.get(), (path + ".missing").c_str()), LMRT_ERR_IO);
  // A FIFO is refused at once (opening it for reading waited for a writer, forever), as is a folder.
  const std::string fifo = path + ".fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(lmrt_context_state_load_file(b.get(), fifo.c_str()), LMRT_ERR_IO);
  EXPECT_NE(std::string(lmrt_context_last_error(b.get())).find("is not a regular file"), std::string::npos);
  ::unlink(fifo.c_str());
  EXPECT_EQ(lmrt_context_state_load_file(b.get(), dir.c_str()), LMRT_ERR_IO);
  // A leftover temporary file is not written through.
  const std::string other = lmrt::test::write_temp_file("other.lmrtstate", "");
  ::unlink(other.c_str());
  const std::string tmp = lmrt::test::write_temp_file("other.lmrtstate.tmp", "keep");
  EXPECT_EQ(lmrt_context_state_save_file(a.get(), other.c_str()), LMRT_ERR_IO);
  EXPECT_EQ(lmrt::test::read_file(tmp), "keep");
  EXPECT_EQ(::access(other.c_str(), F_OK), -1);
  ::unlink(tmp.c_str());
  ::unlink(path.c_str());
  ::unlink(foreign.c_str());
}

}  // namespace
