// A model's identity for the response cache, cheap enough to compute at every load.
#pragma once

#include <array>
#include <cstdint>

#include "runtime/model/gguf_file.h"

namespace lmrt {

// SHA-256 over: a version tag, the file size, every byte before the data section (header,
// metadata, tensor table), and 64 evenly spaced 4 KiB windows of the data section (all of it when
// it is smaller than 256 KiB). The windows catch two files whose headers are equal but whose
// weights differ (a fine-tune that keeps its metadata) at the cost of reading at most 256 KiB.
std::array<uint8_t, 32> model_fingerprint(const GgufFile& gguf);

}  // namespace lmrt
