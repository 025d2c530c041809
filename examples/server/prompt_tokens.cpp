#include "prompt_tokens.h"

#include <algorithm>
#include <cstdint>

namespace server {
namespace {

bool tokenize(const lmrt_model* model, const std::string& text, uint32_t flags, std::vector<int32_t>* out,
              std::string* error) {
  size_t n = 0;
  lmrt_status st = lmrt_tokenize(model, text.data(), text.size(), flags, nullptr, 0, &n);
  if (st == LMRT_ERR_BUFFER_TOO_SMALL || (st == LMRT_OK && n > 0)) {
    const size_t old = out->size();
    out->resize(old + n);
    st = lmrt_tokenize(model, text.data(), text.size(), flags, out->data() + old, n, &n);
    out->resize(old + (st == LMRT_OK ? n : 0));
  }
  if (st == LMRT_OK) return true;
  *error = lmrt_model_last_error(model);
  if (error->empty()) *error = lmrt_status_str(st);
  return false;
}

// The control token a marker text stands for, or -1 when the vocabulary has no such token (then
// the marker is ordinary text).
int32_t control_token(const lmrt_model* model, const std::string& marker) {
  std::vector<int32_t> special, plain;
  std::string ignored;
  if (!tokenize(model, marker, LMRT_TOKENIZE_PARSE_SPECIAL, &special, &ignored) ||
      !tokenize(model, marker, 0, &plain, &ignored))
    return -1;
  return special.size() == 1 && plain != special ? special[0] : -1;
}

}  // namespace

std::optional<std::vector<int32_t>> tokenize_prompt_parts(const lmrt_model* model, const std::vector<PromptPart>& parts,
                                                          const std::vector<std::string>& markers, std::string* error) {
  std::vector<int32_t> ids;
  if (!tokenize(model, "", LMRT_TOKENIZE_ADD_BOS, &ids, error)) return std::nullopt;
  std::vector<int32_t> marker_ids;
  for (const std::string& m : markers) marker_ids.push_back(control_token(model, m));

  std::string run;  // plain text since the last control token
  auto flush = [&] {
    const bool ok = run.empty() || tokenize(model, run, 0, &ids, error);
    run.clear();
    return ok;
  };
  for (const PromptPart& part : parts) {
    if (!part.from_template) {
      run += part.text;
      continue;
    }
    size_t pos = 0;
    while (pos < part.text.size()) {
      // The earliest marker from pos (the longest when two start there).
      size_t best = std::string::npos, best_len = 0;
      int32_t best_id = -1;
      for (size_t i = 0; i < markers.size(); ++i) {
        if (marker_ids[i] < 0 || markers[i].empty()) continue;
        const size_t at = part.text.find(markers[i], pos);
        if (at != std::string::npos && (at < best || (at == best && markers[i].size() > best_len))) {
          best = at;
          best_len = markers[i].size();
          best_id = marker_ids[i];
        }
      }
      if (best == std::string::npos) {
        run.append(part.text, pos, std::string::npos);
        break;
      }
      run.append(part.text, pos, best - pos);
      if (!flush()) return std::nullopt;
      ids.push_back(best_id);
      pos = best + best_len;
    }
  }
  if (!flush()) return std::nullopt;
  return ids;
}

size_t max_text_bytes_per_token(const lmrt_model* model) {
  lmrt_model_info info;
  info.struct_size = sizeof info;
  size_t longest = 4;
  if (lmrt_model_get_info(model, &info) != LMRT_OK) return SIZE_MAX;  // no bound
  for (uint32_t t = 0; t < info.n_vocab; ++t) {
    size_t len = 0;
    const lmrt_status st = lmrt_token_to_piece(model, static_cast<int32_t>(t), nullptr, 0, &len);
    if (st == LMRT_OK || st == LMRT_ERR_BUFFER_TOO_SMALL) longest = std::max(longest, len);
  }
  return longest;
}

}  // namespace server
