// A context's saved state: the tokens it holds and their KV rows, as one self-checking blob
// (state_blob.h) that another context of the same model and geometry can load to go on exactly
// where this one was.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/generate/context.h"
#include "runtime/generate/state_blob.h"
#include "runtime/util/status.h"

namespace lmrt {
// The blob's size for the context as it is now.
size_t context_state_size(const Context& ctx);

// Writes the blob into buf[0, capacity). Errors: buffer_too_small (*written receives the size).
Status save_context_state(const Context& ctx, const ModelFingerprint& model, uint8_t* buf, size_t capacity,
                          size_t* written);
// The blob of the first n_tokens held tokens only (n_tokens <= n_past), as if the context held no
// more: its size, and the blob as a string.
size_t context_prefix_state_size(const Context& ctx, uint32_t n_tokens);
Status save_context_prefix_state(const Context& ctx, const ModelFingerprint& model, uint32_t n_tokens,
                                 std::string* out);

// Replaces the context's tokens and KV rows by the blob's. Everything is checked before anything is
// written, so on any error the context is unchanged. Errors: bad_format (not a state blob, truncated,
// checksum mismatch, tokens outside the vocabulary), unsupported (a newer format version),
// invalid_argument (another model, KV type or geometry), context_full (more tokens than n_ctx).
Status load_context_state(Context& ctx, const ModelFingerprint& model, const uint8_t* data, size_t size);

// The same through a file. Saving writes `path`.tmp (created afresh) and renames it over `path`; an
// existing `path` is replaced only when it is a regular file holding a state blob (never another
// file). Errors: as above, io, invalid_argument (path names something that is not lmrt's state).
Status save_context_state_file(const Context& ctx, const ModelFingerprint& model, const std::string& path);
Status load_context_state_file(Context& ctx, const ModelFingerprint& model, const std::string& path);

}  // namespace lmrt
