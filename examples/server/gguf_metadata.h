// Reads one string value from a GGUF file's metadata (the C API has no metadata accessor yet).
#pragma once

#include <optional>
#include <string>

namespace server {

// The string stored under `key` in the GGUF header of the file at `path`, or nullopt when the file
// cannot be read, is not GGUF v2/v3, is damaged, or has no such string key. Never throws.
std::optional<std::string> read_gguf_string(const std::string& path, const std::string& key);

}  // namespace server
