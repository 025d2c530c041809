#include "runtime/tokenizer/vocab.h"

#include <cmath>
#include <limits>
#include <optional>
#include <string_view>

#include "runtime/model/gguf_file.h"

namespace lmrt {
namespace {

constexpr std::string_view kTokensKey = "tokenizer.ggml.tokens";
constexpr std::string_view kScoresKey = "tokenizer.ggml.scores";
constexpr std::string_view kTypesKey = "tokenizer.ggml.token_type";
constexpr std::string_view kMergesKey = "tokenizer.ggml.merges";

// The pre-tokenizers for which llama.cpp adds BOS when the file does not say (Llama 3 and kin).
bool bpe_adds_bos_by_default(std::string_view pre) {
  for (std::string_view p : {"llama3", "llama-v3", "llama-bpe", "falcon3", "pixtral", "tekken", "chameleon"}) {
    if (pre == p) return true;
  }
  return false;
}

bool is_hex_digit(char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F') || (c >= 'a' && c <= 'f'); }

bool is_byte_token_text(std::string_view text) {
  return text.size() == 6 && text.substr(0, 3) == "<0x" && is_hex_digit(text[3]) && is_hex_digit(text[4]) &&
         text[5] == '>';
}

Status check_special_id(const char* what, int32_t id, int32_t n) {
  if (id == -1 || (id >= 0 && id < n)) return Status::Ok();
  return Error(Code::invalid_argument, std::string(what) + " token id " + std::to_string(id) +
                                           " is out of range (vocabulary has " + std::to_string(n) + " tokens)");
}

// Reads an optional token id key. Missing -> fallback; -1 or 0xFFFFFFFF (u32 -1) -> -1.
Status read_token_id(const GgufFile& gguf, std::string_view key, int32_t fallback, int32_t* out) {
  const GgufValue* v = gguf.find(key);
  if (v == nullptr) {
    *out = fallback;
    return Status::Ok();
  }
  std::optional<int64_t> x = v->as_int();
  if (!x || v->type == GgufValueType::boolean) {
    return Error(Code::bad_format, std::string(key) + " must be an integer, not " + gguf_value_type_name(v->type));
  }
  if (*x == -1 || *x == 0xFFFFFFFFll) {
    *out = -1;
  } else if (*x < 0 || *x > std::numeric_limits<int32_t>::max()) {
    return Error(Code::bad_format, std::string(key) + " = " + std::to_string(*x) + " is not a valid token id");
  } else {
    *out = static_cast<int32_t>(*x);
  }
  return Status::Ok();
}

Status read_flag(const GgufFile& gguf, std::string_view key, bool fallback, bool* out) {
  const GgufValue* v = gguf.find(key);
  if (v == nullptr) {
    *out = fallback;
    return Status::Ok();
  }
  std::optional<bool> b = gguf.get_bool(key);
  if (!b) return Error(Code::bad_format, std::string(key) + " must be a bool, not " + gguf_value_type_name(v->type));
  *out = *b;
  return Status::Ok();
}

const GgufValue* find_array(const GgufFile& gguf, std::string_view key) {
  const GgufValue* v = gguf.find(key);
  return v != nullptr && v->type == GgufValueType::array ? v : nullptr;
}

// Copies an array of strings into one pool, read straight from the mapping.
Status copy_strings(const GgufValue& array, std::string_view key, StringTable* out) {
  size_t bytes = 0;
  for (uint64_t k = 0; k < array.size(); ++k) bytes += array.string_item(k).size();
  out->reserve(array.size(), bytes);
  for (uint64_t k = 0; k < array.size(); ++k) {
    if (!out->push_back(array.string_item(k)))
      return Error(Code::unsupported, std::string(key) + " holds more than 4 GiB of text");
  }
  return Status::Ok();
}

}  // namespace

const char* token_type_name(TokenType type) {
  switch (type) {
    case TokenType::normal:
      return "normal";
    case TokenType::unknown:
      return "unknown";
    case TokenType::control:
      return "control";
    case TokenType::user_defined:
      return "user_defined";
    case TokenType::unused:
      return "unused";
    case TokenType::byte:
      return "byte";
  }
  return "invalid";
}

uint8_t byte_token_value(std::string_view text) {
  auto hex = [](char c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; };
  return static_cast<uint8_t>(hex(text[3]) * 16 + hex(text[4]));
}

const char* tokenizer_kind_name(TokenizerKind kind) { return kind == TokenizerKind::bpe ? "gpt2" : "llama"; }

Status Vocab::validate() const {
  if (tokens.empty()) return Error(Code::invalid_argument, "vocabulary has no tokens");
  if (tokens.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return Error(Code::invalid_argument, "vocabulary has " + std::to_string(tokens.size()) + " tokens, too many");
  }
  if (scores.size() != tokens.size() || types.size() != tokens.size()) {
    return Error(Code::invalid_argument, "vocabulary arrays differ in length: " + std::to_string(tokens.size()) +
                                             " tokens, " + std::to_string(scores.size()) + " scores, " +
                                             std::to_string(types.size()) + " token types");
  }
  const int32_t n = size();
  for (int32_t id = 0; id < n; ++id) {
    const int32_t t = static_cast<int32_t>(types[id]);
    if (t < static_cast<int32_t>(TokenType::normal) || t > static_cast<int32_t>(TokenType::byte)) {
      return Error(Code::invalid_argument,
                   "token " + std::to_string(id) + " has invalid token type " + std::to_string(t) + " (expected 1..6)");
    }
    if (types[id] == TokenType::byte && !is_byte_token_text(tokens[id])) {
      return Error(Code::invalid_argument, "byte token " + std::to_string(id) + " has text \"" +
                                               std::string(tokens[id]) + "\", expected <0xXX>");
    }
  }
  LMRT_RETURN_IF_ERROR(check_special_id("BOS", bos_id, n));
  LMRT_RETURN_IF_ERROR(check_special_id("EOS", eos_id, n));
  LMRT_RETURN_IF_ERROR(check_special_id("unknown", unk_id, n));
  LMRT_RETURN_IF_ERROR(check_special_id("EOT", eot_id, n));
  LMRT_RETURN_IF_ERROR(check_special_id("EOM", eom_id, n));
  if (add_bos && bos_id < 0) return Error(Code::invalid_argument, "vocabulary asks for BOS but has no BOS token");
  if (add_eos && eos_id < 0) return Error(Code::invalid_argument, "vocabulary asks for EOS but has no EOS token");
  return Status::Ok();
}

Status Vocab::from_gguf(const GgufFile& gguf, Vocab* out) {
  const GgufValue* model = gguf.find("tokenizer.ggml.model");
  if (model == nullptr) return Error(Code::bad_format, "GGUF file has no tokenizer (tokenizer.ggml.model is missing)");
  if (model->type != GgufValueType::string) {
    return Error(Code::bad_format,
                 std::string("tokenizer.ggml.model must be a string, not ") + gguf_value_type_name(model->type));
  }
  Vocab v;
  if (model->str == "llama") {
    v.kind = TokenizerKind::spm;
  } else if (model->str == "gpt2") {
    v.kind = TokenizerKind::bpe;
  } else {
    return Error(Code::unsupported, "tokenizer model \"" + std::string(model->str) +
                                        "\" is not supported (only \"llama\" SentencePiece and \"gpt2\" "
                                        "byte-level BPE vocabularies are)");
  }
  if (const GgufValue* pre = gguf.find("tokenizer.ggml.pre"); pre != nullptr) {
    if (pre->type != GgufValueType::string)
      return Error(Code::bad_format,
                   std::string("tokenizer.ggml.pre must be a string, not ") + gguf_value_type_name(pre->type));
    v.pre = pre->str;
  }
  if (v.kind == TokenizerKind::bpe) {
    const GgufValue* merges = find_array(gguf, kMergesKey);
    if (merges == nullptr || merges->elem_type != GgufValueType::string)
      return Error(Code::bad_format,
                   "tokenizer.ggml.merges is missing or not an array of strings (a gpt2 "
                   "vocabulary needs its merges)");
    LMRT_RETURN_IF_ERROR(copy_strings(*merges, kMergesKey, &v.merges));
  }
  const GgufValue* tokens = find_array(gguf, kTokensKey);
  if (tokens == nullptr || tokens->elem_type != GgufValueType::string) {
    return Error(Code::bad_format, "tokenizer.ggml.tokens is missing or not an array of strings");
  }
  const size_t n = tokens->size();
  LMRT_RETURN_IF_ERROR(copy_strings(*tokens, kTokensKey, &v.tokens));

  if (gguf.find(kScoresKey) != nullptr) {
    const GgufValue* scores = find_array(gguf, kScoresKey);
    if (scores == nullptr) return Error(Code::bad_format, "tokenizer.ggml.scores is not an array");
    v.scores.reserve(scores->size());
    for (uint64_t k = 0; k < scores->size(); ++k) {
      std::optional<double> f = scores->item(k).as_float();
      if (!f) return Error(Code::bad_format, "tokenizer.ggml.scores holds a non-numeric value");
      // A NaN score makes every comparison of merges false, so the tokenization would depend on order.
      if (std::isnan(*f))
        return Error(Code::bad_format, "tokenizer.ggml.scores[" + std::to_string(v.scores.size()) + "] is NaN");
      v.scores.push_back(static_cast<float>(*f));
    }
  } else {
    v.scores.assign(n, 0.0f);
  }

  if (gguf.find(kTypesKey) != nullptr) {
    const GgufValue* types = find_array(gguf, kTypesKey);
    if (types == nullptr) return Error(Code::bad_format, "tokenizer.ggml.token_type is not an array");
    v.types.reserve(types->size());
    for (uint64_t k = 0; k < types->size(); ++k) {
      std::optional<int64_t> t = types->item(k).as_int();
      if (!t || *t < std::numeric_limits<int32_t>::min() || *t > std::numeric_limits<int32_t>::max()) {
        return Error(Code::bad_format, "tokenizer.ggml.token_type holds a non-integer or out-of-range value");
      }
      v.types.push_back(static_cast<TokenType>(static_cast<int32_t>(*t)));
    }
  } else {
    v.types.assign(n, TokenType::normal);
  }

  // llama.cpp's defaults per tokenizer kind, used only where they name a real token.
  auto fallback = [n](int32_t id) { return static_cast<size_t>(id) < n ? id : -1; };
  const bool spm = v.kind == TokenizerKind::spm;
  LMRT_RETURN_IF_ERROR(read_token_id(gguf, "tokenizer.ggml.bos_token_id", fallback(spm ? 1 : 11), &v.bos_id));
  LMRT_RETURN_IF_ERROR(read_token_id(gguf, "tokenizer.ggml.eos_token_id", fallback(spm ? 2 : 11), &v.eos_id));
  LMRT_RETURN_IF_ERROR(read_token_id(gguf, "tokenizer.ggml.unknown_token_id", spm ? fallback(0) : -1, &v.unk_id));
  LMRT_RETURN_IF_ERROR(read_token_id(gguf, "tokenizer.ggml.eot_token_id", -1, &v.eot_id));
  LMRT_RETURN_IF_ERROR(read_token_id(gguf, "tokenizer.ggml.eom_token_id", -1, &v.eom_id));
  const bool default_bos = spm || bpe_adds_bos_by_default(v.pre);
  LMRT_RETURN_IF_ERROR(read_flag(gguf, "tokenizer.ggml.add_bos_token", default_bos, &v.add_bos));
  LMRT_RETURN_IF_ERROR(read_flag(gguf, "tokenizer.ggml.add_eos_token", false, &v.add_eos));
  LMRT_RETURN_IF_ERROR(read_flag(gguf, "tokenizer.ggml.add_space_prefix", spm, &v.add_space_prefix));

  Status s = v.validate();
  if (!s.ok()) return Error(Code::bad_format, "GGUF vocabulary: " + s.message());
  *out = std::move(v);
  return Status::Ok();
}

}  // namespace lmrt
