#define PCRE2_CODE_UNIT_WIDTH 8
#include "runtime/tokenizer/bpe_pretokenizer.h"

#include <pcre2.h>

#include <initializer_list>

namespace lmrt {
namespace {

// Regexes from the vocabularies' tokenizer.json files, as llama.cpp groups them per tokenizer.ggml.pre.
constexpr const char* kGpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
constexpr const char* kLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kQwen2 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kGpt4o =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
    R"(|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
    R"(|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// DeepSeek's classes are explicit code point ranges in its tokenizer.json (written as escapes here).
constexpr const char* kDeepseekLlmLetters =
    "\\s?[A-Za-z\u00B5\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u01BA\u01BC-\u01BF\u01C4-\u0293\u0295-\u02AF\u0370"
    "-\u0373\u0376\u0377\u037B-\u037D\u037F\u0386\u0388-\u038A\u038C\u038E-\u03A1\u03A3-\u03F5\u03F7-"
    "\u0481\u048A-\u052F\u0531-\u0556\u10A0-\u10C5\u13A0-\u13F5\u13F8-\u13FD\u1C90-\u1CBA\u1CBD-\u1CBF"
    "\u1D00-\u1D2B\u1D6B-\u1D77\u1D79-\u1D9A\u1E00-\u1F15\u1F18-\u1F1D\u1F20-\u1F45\u1F48-\u1F4D\u1F50"
    "-\u1F57\u1F59\u1F5B\u1F5D\u1F5F-\u1F7D\u1F80-\u1FB4\u1FB6-\u1FBC\u1FBE\u1FC2-\u1FC4\u1FC6-\u1FCC"
    "\u1FD0-\u1FD3\u1FD6-\u1FDB\u1FE0-\u1FEC\u1FF2-\u1FF4\u1FF6-\u1FFC\u2102\u2107\u210A-\u2113\u2115"
    "\u2119-\u211D\u2124\u2126\u2128\u212A-\u212D\u212F-\u2134\u2139\u213C-\u213F\u2145-\u2149\u214E\u2183"
    "\u2184\u2C00-\u2C7B\u2C7E-\u2CE4\u2CEB-\u2CEE\u2CF2\u2CF3\uA640-\uA66D\uA680-\uA69B\uA722-\uA76F"
    "\uA771-\uA787\uA78B-\uA78E\uAB70-\uABBF\uFB00-\uFB06\uFB13-\uFB17\uFF21-\uFF3A\uFF41-\uFF5A\U00010400"
    "-\U0001044F\U000104B0-\U000104D3\U000104D8-\U000104FB\U00010C80-\U00010CB2\U00010CC0-\U00010CF2\U000118A0"
    "-\U000118DF\U0001E900-\U0001E943]+";
constexpr const char* kDeepseekPunct = "\\s?[!-/:-~\uFF01-\uFF0F\uFF1A-\uFF5E\u2018-\u201F\u3000-\u3002]+";
constexpr const char* kCjkHangul = "[\u4E00-\u9FA5\u0800-\u4E00\uAC00-\uD7FF]+";

bool is_one_of(std::string_view name, std::initializer_list<std::string_view> names) {
  for (std::string_view n : names) {
    if (name == n) return true;
  }
  return false;
}

// The regexes of a pre-tokenizer; empty when the name is unknown.
std::vector<std::string> patterns_for(std::string_view pre) {
  if (is_one_of(pre, {"llama3", "llama-v3", "llama-bpe", "falcon3", "pixtral", "dbrx", "smaug-bpe"})) return {kLlama3};
  if (is_one_of(pre, {"qwen2", "deepseek-r1-qwen", "stablelm2", "megrez"})) return {kQwen2};
  if (is_one_of(pre, {"gpt-2", "phi-2", "mpt", "olmo", "jais", "roberta-bpe", "jina-v1-en", "jina-v2-code"}))
    return {kGpt2};
  if (is_one_of(pre, {"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b"}))
    return {R"(\p{N})", kGpt2};
  if (is_one_of(pre, {"gpt-4o", "llama4"})) return {kGpt4o};
  if (pre == "deepseek-llm") {
    return {"[\r\n]", kDeepseekLlmLetters, kDeepseekPunct, R"(\s+$)", kCjkHangul, R"(\p{N}+)"};
  }
  if (pre == "deepseek-coder") return {"[\r\n]", R"(\s?\p{L}+)", R"(\s?\p{P}+)", kCjkHangul, R"(\p{N})"};
  if (pre == "falcon") return {R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2, "[0-9][0-9][0-9]"};
  if (pre.empty() || pre == "default") {
    return {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2, R"(\p{N}+)", "[0-9][0-9][0-9]"};
  }
  return {};
}

std::string pcre2_message(int code) {
  PCRE2_UCHAR buf[256];
  if (pcre2_get_error_message(code, buf, sizeof buf) < 0) return "PCRE2 error " + std::to_string(code);
  return reinterpret_cast<const char*>(buf);
}

// Per-call PCRE2 state (match data and a JIT stack big enough for long runs of one class).
struct MatchState {
  pcre2_match_data* data = nullptr;
  pcre2_jit_stack* stack = nullptr;
  pcre2_match_context* context = nullptr;
  ~MatchState() {
    pcre2_match_data_free(data);
    pcre2_match_context_free(context);
    pcre2_jit_stack_free(stack);
  }
};

}  // namespace

Status BpePretokenizer::create(std::string_view pre, std::unique_ptr<BpePretokenizer>* out) {
  std::vector<std::string> patterns = patterns_for(pre);
  if (patterns.empty()) {
    return Error(Code::unsupported, "BPE pre-tokenizer \"" + std::string(pre) +
                                        "\" is not supported (supported: llama-bpe, qwen2, gpt-2, smollm, "
                                        "deepseek-llm, deepseek-coder, falcon, mpt, starcoder, refact, command-r, "
                                        "gpt-4o and their aliases)");
  }
  std::unique_ptr<BpePretokenizer> p(new BpePretokenizer());
  for (const std::string& pattern : patterns) {
    int error = 0;
    PCRE2_SIZE offset = 0;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                     PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY, &error, &offset, nullptr);
    if (code == nullptr) {
      return Error(Code::internal, "pre-tokenizer regex of \"" + std::string(pre) + "\" does not compile at offset " +
                                       std::to_string(offset) + ": " + pcre2_message(error));
    }
    (void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // without JIT (unsupported CPU) matching is slower only
    p->codes_.push_back(code);
  }
  p->patterns_ = std::move(patterns);
  *out = std::move(p);
  return Status::Ok();
}

BpePretokenizer::~BpePretokenizer() {
  for (void* code : codes_) pcre2_code_free(static_cast<pcre2_code*>(code));
}

Status BpePretokenizer::split(std::string_view text, std::vector<std::pair<size_t, size_t>>* words) const {
  words->clear();
  if (text.empty()) return Status::Ok();
  MatchState st;
  st.data = pcre2_match_data_create(1, nullptr);
  st.context = pcre2_match_context_create(nullptr);
  st.stack = pcre2_jit_stack_create(32 * 1024, 4 * 1024 * 1024, nullptr);
  if (st.data == nullptr || st.context == nullptr) return Error(Code::out_of_memory, "cannot allocate regex state");
  if (st.stack != nullptr) pcre2_jit_stack_assign(st.context, nullptr, st.stack);

  std::vector<std::pair<size_t, size_t>> pieces{{0, text.size()}}, next;
  for (void* c : codes_) {
    const pcre2_code* code = static_cast<const pcre2_code*>(c);
    next.clear();
    for (const auto& [begin, length] : pieces) {
      // Each piece is matched on its own, so lookarounds and $ see the piece's ends.
      const PCRE2_SPTR subject = reinterpret_cast<PCRE2_SPTR>(text.data() + begin);
      size_t pos = 0, kept = 0;
      while (pos < length) {
        const int rc = pcre2_match(code, subject, length, pos, PCRE2_NO_UTF_CHECK, st.data, st.context);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) return Error(Code::internal, "pre-tokenizer regex failed: " + pcre2_message(rc));
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(st.data);
        const size_t m_begin = ov[0], m_end = ov[1];
        if (m_end == m_begin) {  // an empty match splits nothing: step over one character
          ++pos;
          while (pos < length && (static_cast<uint8_t>(text[begin + pos]) & 0xC0) == 0x80) ++pos;
          continue;
        }
        if (m_begin > kept) next.emplace_back(begin + kept, m_begin - kept);
        next.emplace_back(begin + m_begin, m_end - m_begin);
        kept = pos = m_end;
      }
      if (kept < length) next.emplace_back(begin + kept, length - kept);
    }
    pieces.swap(next);
  }
  *words = std::move(pieces);
  return Status::Ok();
}

}  // namespace lmrt
