#include "runtime/generate/state_blob.h"

#include <cstring>
#include <string>

#include "runtime/cache/sha256.h"

namespace lmrt {

namespace {

constexpr char kMagic[8] = {'L', 'M', 'R', 'T', 'S', 'T', 'A', 'T'};
constexpr uint32_t kVersion = 1;

void put_u32(uint8_t*& p, uint32_t v) {
  for (int i = 0; i < 4; ++i) *p++ = static_cast<uint8_t>(v >> (8 * i));
}

uint32_t get_u32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

std::string kv_name(uint32_t t) { return t == 0 ? "F16" : t == 1 ? "F32" : "type " + std::to_string(t); }

}  // namespace

int32_t StateBlobView::token(uint32_t i) const { return static_cast<int32_t>(get_u32(tokens + size_t{i} * 4)); }

size_t state_blob_size(const StateGeometry& g, uint32_t n_tokens) {
  return kStateHeaderBytes + size_t{n_tokens} * 4 + size_t{g.n_layer} * 2 * g.n_head_kv * g.head_run_bytes(n_tokens) +
         kStateChecksumBytes;
}

uint8_t* write_state_head(uint8_t* buf, const ModelFingerprint& model, const StateGeometry& g, uint32_t saver_n_ctx,
                          const int32_t* tokens, uint32_t n_tokens) {
  uint8_t* p = buf;
  std::memcpy(p, kMagic, sizeof kMagic);
  p += sizeof kMagic;
  put_u32(p, kVersion);
  std::memcpy(p, model.data(), model.size());
  p += model.size();
  for (uint32_t v : {g.kv_type, g.n_layer, g.n_head_kv, g.head_dim, g.n_vocab, saver_n_ctx, n_tokens}) put_u32(p, v);
  for (uint32_t i = 0; i < n_tokens; ++i) put_u32(p, static_cast<uint32_t>(tokens[i]));
  return p;
}

void seal_state_blob(uint8_t* buf, size_t size) {
  const size_t body = size - kStateChecksumBytes;
  const Sha256Digest sum = Sha256::hash(buf, body);
  std::memcpy(buf + body, sum.data(), sum.size());
}

bool looks_like_state_blob(const uint8_t* data, size_t size) {
  return size >= sizeof kMagic && std::memcmp(data, kMagic, sizeof kMagic) == 0;
}

Status read_state_blob(const uint8_t* data, size_t size, const ModelFingerprint& model, const StateGeometry& g,
                       uint32_t max_tokens, StateBlobView* out) {
  if (size < kStateHeaderBytes + kStateChecksumBytes || !looks_like_state_blob(data, size))
    return Error(Code::bad_format, "not an lmrt context state (no LMRTSTAT header, or shorter than one)");
  const uint8_t* p = data + sizeof kMagic;
  const uint32_t version = get_u32(p);
  p += 4;
  if (version != kVersion)
    return Error(version > kVersion ? Code::unsupported : Code::bad_format,
                 "context state format version " + std::to_string(version) + "; this lmrt reads version " +
                     std::to_string(kVersion));
  ModelFingerprint saved_model;
  std::memcpy(saved_model.data(), p, saved_model.size());
  p += saved_model.size();
  if (saved_model != model)
    return Error(Code::invalid_argument, "the state was saved with another model (fingerprint " +
                                             sha256_hex(saved_model).substr(0, 16) + "..., this model's is " +
                                             sha256_hex(model).substr(0, 16) + "...)");
  StateGeometry saved;
  uint32_t saver_n_ctx = 0, n = 0;
  for (uint32_t* v :
       {&saved.kv_type, &saved.n_layer, &saved.n_head_kv, &saved.head_dim, &saved.n_vocab, &saver_n_ctx, &n}) {
    *v = get_u32(p);
    p += 4;
  }
  if (saved.kv_type != g.kv_type)
    return Error(Code::invalid_argument,
                 "the state holds " + kv_name(saved.kv_type) + " KV entries; this context's are " + kv_name(g.kv_type));
  if (saved.n_layer != g.n_layer || saved.n_head_kv != g.n_head_kv || saved.head_dim != g.head_dim ||
      saved.n_vocab != g.n_vocab)
    return Error(Code::invalid_argument, "the state's geometry (" + std::to_string(saved.n_layer) + " layers, " +
                                             std::to_string(saved.n_head_kv) + " KV heads of " +
                                             std::to_string(saved.head_dim) + ", vocabulary " +
                                             std::to_string(saved.n_vocab) + ") is not this model's");
  if (n > max_tokens)
    return Error(Code::context_full, "the state holds " + std::to_string(n) + " tokens; this context holds at most " +
                                         std::to_string(max_tokens) + " (it was saved from n_ctx " +
                                         std::to_string(saver_n_ctx) + ")");
  const size_t want = state_blob_size(g, n);
  if (size != want)
    return Error(Code::bad_format, "a state of " + std::to_string(n) + " tokens takes " + std::to_string(want) +
                                       " bytes; " + std::to_string(size) + " were given (truncated or extended)");
  const Sha256Digest sum = Sha256::hash(data, size - kStateChecksumBytes);
  if (std::memcmp(sum.data(), data + size - kStateChecksumBytes, sum.size()) != 0)
    return Error(Code::bad_format, "the state's checksum does not match its contents (damaged)");
  StateBlobView v;
  v.saver_n_ctx = saver_n_ctx;
  v.n_tokens = n;
  v.tokens = p;
  v.kv = p + size_t{n} * 4;
  for (uint32_t i = 0; i < n; ++i) {
    const int32_t t = v.token(i);
    if (t < 0 || static_cast<uint32_t>(t) >= g.n_vocab)
      return Error(Code::bad_format, "token " + std::to_string(t) + " at " + std::to_string(i) +
                                         " of the state is outside the vocabulary");
  }
  *out = v;
  return Status::Ok();
}

}  // namespace lmrt
