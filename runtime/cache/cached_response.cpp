#include "runtime/cache/cached_response.h"

#include <cstring>
#include <limits>

#include "runtime/cache/byte_codec.h"

namespace lmrt {

namespace {

// Layout: magic "LMRC", u16 version, u16 flags (0), u64 FNV-1a checksum of everything after it,
// then the fields in order. Bump kFormatVersion on any change.
constexpr char kMagic[4] = {'L', 'M', 'R', 'C'};
constexpr uint16_t kFormatVersion = 2;  // 2: piece_tokens
constexpr size_t kHeaderSize = 4 + 2 + 2 + 8;

// FNV-1a 64: each step is a bijection of the running state for a fixed input byte, so any single
// changed byte always changes the checksum.
uint64_t fnv1a64(const uint8_t* p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

constexpr uint64_t kU32Max = std::numeric_limits<uint32_t>::max();

Status bad(const std::string& what) { return Error(Code::bad_format, "damaged cached response: " + what); }

}  // namespace

bool operator==(const CachedTokenAlternative& a, const CachedTokenAlternative& b) {
  return a.token == b.token && std::memcmp(&a.logprob, &b.logprob, sizeof(float)) == 0;
}
bool operator==(const CachedTokenLogprob& a, const CachedTokenLogprob& b) {
  return a.token == b.token && std::memcmp(&a.logprob, &b.logprob, sizeof(float)) == 0 && a.top == b.top;
}
bool CachedResponse::operator==(const CachedResponse& o) const {
  return text == o.text && tokens == o.tokens && finish_reason == o.finish_reason && prompt_tokens == o.prompt_tokens &&
         completion_tokens == o.completion_tokens && logprobs == o.logprobs && piece_lengths == o.piece_lengths &&
         piece_tokens == o.piece_tokens;
}

Status serialize_cached_response(const CachedResponse& r, std::string* out) {
  if (r.text.size() > kU32Max || r.finish_reason.size() > kU32Max || r.tokens.size() > kU32Max ||
      r.logprobs.size() > kU32Max || r.piece_lengths.size() > kU32Max) {
    return Error(Code::invalid_argument, "cached response too large to store");
  }
  uint64_t piece_sum = 0;
  for (uint32_t len : r.piece_lengths) piece_sum += len;
  if (!r.piece_lengths.empty() && piece_sum != r.text.size()) {
    return Error(Code::invalid_argument, "cached response piece lengths sum to " + std::to_string(piece_sum) +
                                             ", text has " + std::to_string(r.text.size()) + " bytes");
  }
  uint64_t token_sum = 0;
  for (uint32_t n : r.piece_tokens) token_sum += n;
  if (!r.piece_tokens.empty() && (r.piece_tokens.size() != r.piece_lengths.size() || token_sum > r.tokens.size()))
    return Error(Code::invalid_argument, "cached response piece token counts do not match its pieces and tokens");
  size_t lp_size = 0;
  for (const CachedTokenLogprob& lp : r.logprobs) {
    if (lp.top.size() > kU32Max) return Error(Code::invalid_argument, "cached response too large to store");
    lp_size += 12 + 8 * lp.top.size();
  }

  cache_codec::ByteWriter w;
  w.reserve(kHeaderSize + 32 + r.text.size() + r.finish_reason.size() + 4 * r.tokens.size() +
            8 * r.piece_lengths.size() + lp_size);
  w.raw(kMagic, sizeof kMagic);
  w.u32(kFormatVersion);  // u16 version + u16 flags (0)
  w.u64(0);               // checksum, filled in below
  w.bytes32(r.text);
  w.bytes32(r.finish_reason);
  w.i32(r.prompt_tokens);
  w.i32(r.completion_tokens);
  w.u32(static_cast<uint32_t>(r.tokens.size()));
  for (int32_t t : r.tokens) w.i32(t);
  w.u32(static_cast<uint32_t>(r.piece_lengths.size()));
  for (uint32_t len : r.piece_lengths) w.u32(len);
  w.u32(static_cast<uint32_t>(r.piece_tokens.size()));
  for (uint32_t n : r.piece_tokens) w.u32(n);
  w.u32(static_cast<uint32_t>(r.logprobs.size()));
  for (const CachedTokenLogprob& lp : r.logprobs) {
    w.i32(lp.token);
    w.f32(lp.logprob);
    w.u32(static_cast<uint32_t>(lp.top.size()));
    for (const CachedTokenAlternative& alt : lp.top) {
      w.i32(alt.token);
      w.f32(alt.logprob);
    }
  }
  std::string& s = w.str();
  const uint64_t sum = fnv1a64(reinterpret_cast<const uint8_t*>(s.data()) + kHeaderSize, s.size() - kHeaderSize);
  for (int i = 0; i < 8; ++i) s[8 + i] = static_cast<char>(sum >> (8 * i));
  *out = std::move(s);
  return Status::Ok();
}

Status deserialize_cached_response(const uint8_t* data, size_t size, CachedResponse* out) {
  if (data == nullptr || size < kHeaderSize) return bad("shorter than its header");
  if (std::memcmp(data, kMagic, sizeof kMagic) != 0) return bad("wrong magic");
  cache_codec::ByteReader r(data + 4, size - 4);
  uint16_t version = 0, flags = 0;
  uint64_t checksum = 0;
  (void)r.u16(&version);
  (void)r.u16(&flags);
  (void)r.u64(&checksum);
  if (version != kFormatVersion) {
    return Error(version > kFormatVersion ? Code::unsupported : Code::bad_format,
                 "cached response format version " + std::to_string(version) + " (this lmrt reads " +
                     std::to_string(kFormatVersion) + ")");
  }
  if (flags != 0) return bad("unknown flags");
  if (fnv1a64(data + kHeaderSize, size - kHeaderSize) != checksum) return bad("checksum mismatch");

  CachedResponse res;
  uint32_t n = 0;
  if (!r.bytes32(&res.text) || !r.bytes32(&res.finish_reason)) return bad("truncated text");
  if (!r.i32(&res.prompt_tokens) || !r.i32(&res.completion_tokens)) return bad("truncated usage");
  // Every count is checked against the bytes left before anything is allocated.
  if (!r.u32(&n) || uint64_t{n} * 4 > r.remaining()) return bad("token count overruns the blob");
  res.tokens.resize(n);
  for (int32_t& t : res.tokens) (void)r.i32(&t);
  if (!r.u32(&n) || uint64_t{n} * 4 > r.remaining()) return bad("piece count overruns the blob");
  res.piece_lengths.resize(n);
  uint64_t piece_sum = 0;
  for (uint32_t& len : res.piece_lengths) {
    (void)r.u32(&len);
    piece_sum += len;
  }
  if (!res.piece_lengths.empty() && piece_sum != res.text.size()) return bad("piece lengths do not match the text");
  if (!r.u32(&n) || uint64_t{n} * 4 > r.remaining()) return bad("piece token count overruns the blob");
  res.piece_tokens.resize(n);
  uint64_t token_sum = 0;
  for (uint32_t& c : res.piece_tokens) {
    (void)r.u32(&c);
    token_sum += c;
  }
  if (!res.piece_tokens.empty() &&
      (res.piece_tokens.size() != res.piece_lengths.size() || token_sum > res.tokens.size()))
    return bad("piece token counts do not match the pieces");
  if (!r.u32(&n) || uint64_t{n} * 12 > r.remaining()) return bad("logprob count overruns the blob");
  res.logprobs.resize(n);
  for (CachedTokenLogprob& lp : res.logprobs) {
    uint32_t n_top = 0;
    if (!r.i32(&lp.token) || !r.f32(&lp.logprob) || !r.u32(&n_top)) return bad("truncated logprobs");
    if (uint64_t{n_top} * 8 > r.remaining()) return bad("alternative count overruns the blob");
    lp.top.resize(n_top);
    for (CachedTokenAlternative& alt : lp.top) {
      (void)r.i32(&alt.token);
      (void)r.f32(&alt.logprob);
    }
  }
  if (r.remaining() != 0) return bad(std::to_string(r.remaining()) + " trailing bytes");
  *out = std::move(res);
  return Status::Ok();
}

}  // namespace lmrt
