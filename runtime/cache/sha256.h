// SHA-256 (FIPS 180-4), written for lmrt: the response-cache key and the model fingerprint.
// Incremental: update() any number of times, then finish() once.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace lmrt {

using Sha256Digest = std::array<uint8_t, 32>;

class Sha256 {
 public:
  Sha256();

  void update(const void* data, size_t size);
  void update(std::string_view bytes) { update(bytes.data(), bytes.size()); }
  // Pads, processes the last block and returns the digest. The object must not be updated after.
  Sha256Digest finish();

  static Sha256Digest hash(const void* data, size_t size);
  static Sha256Digest hash(std::string_view bytes) { return hash(bytes.data(), bytes.size()); }

 private:
  void process_block(const uint8_t* block);

  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
};

// Lower-case hex of a digest (64 characters).
std::string sha256_hex(const Sha256Digest& digest);

}  // namespace lmrt
