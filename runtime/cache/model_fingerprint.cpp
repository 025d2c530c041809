#include "runtime/cache/model_fingerprint.h"

#include <algorithm>

#include "runtime/cache/byte_codec.h"
#include "runtime/cache/sha256.h"

namespace lmrt {

namespace {
constexpr char kTag[] = "lmrt.model-fingerprint.v1";
constexpr uint64_t kWindowBytes = 4096;
constexpr uint64_t kWindows = 64;
}  // namespace

std::array<uint8_t, 32> model_fingerprint(const GgufFile& gguf) {
  const MappedFile& file = gguf.file();
  const uint64_t size = file.size();
  const uint64_t header_bytes = std::min<uint64_t>(gguf.data_offset(), size);

  Sha256 h;
  cache_codec::ByteWriter prefix;
  prefix.bytes64(kTag);
  prefix.u64(size);
  prefix.u64(header_bytes);
  h.update(prefix.str());
  h.update(file.data(), header_bytes);

  const uint8_t* data = file.data() + header_bytes;
  const uint64_t data_bytes = size - header_bytes;
  if (data_bytes <= kWindows * kWindowBytes) {
    h.update(data, data_bytes);
  } else {
    // Window i starts at i/(kWindows-1) of the way through, so the first and last bytes are covered.
    const uint64_t span = data_bytes - kWindowBytes;
    for (uint64_t i = 0; i < kWindows; ++i) h.update(data + span * i / (kWindows - 1), kWindowBytes);
  }
  return h.finish();
}

}  // namespace lmrt
