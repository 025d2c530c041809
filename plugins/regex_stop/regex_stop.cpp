// regex_stop: the stop criterion `regex(pattern=..., include=0, icase=0)`. Generation stops as soon
// as a match of the pattern ends in the generated text; the text is cut at the start of that match
// (include=1: at its end, keeping the match). Among matches ending at the same byte the leftmost
// wins. While there is no match, the tail of the text that could still grow into a match is held
// back (not streamed yet), so a stop never arrives after its first bytes were shown.
#include <lmrt/lmrt_plugin.h>

#include <new>
#include <string>

#include "byte_regex.h"

namespace {

struct RegexStop {
  regex_stop::ByteRegex re;
  regex_stop::ByteRegex::Scan scan;
  bool include = false;
};

int32_t fail(char* err, size_t err_size, const std::string& message) {
  lmrt_plugin_set_error(err, err_size, message.c_str());
  return 1;
}

bool parse_flag(const std::string& v, bool* out) {
  if (v == "0" || v == "false") return *out = false, true;
  if (v == "1" || v == "true") return *out = true, true;
  return false;
}

int32_t create(const char* config, const lmrt_plugin_env*, void** state, char* err, size_t err_size) {
  try {
    std::string pattern;
    bool have_pattern = false, include = false, icase = false;
    std::string key(64, '\0'), value(4096, '\0');
    const char* cursor = config;
    int rc, positional = 0;
    while ((rc = lmrt_plugin_config_next(&cursor, key.data(), key.size(), value.data(), value.size())) == 1) {
      std::string k = key.c_str();
      const std::string v = value.c_str();
      if (k.empty()) {
        if (positional++ > 0) return fail(err, err_size, "only the pattern may be given without a name");
        k = "pattern";
      }
      if (k == "pattern") {
        pattern = v;
        have_pattern = true;
      } else if (k == "include") {
        if (!parse_flag(v, &include)) return fail(err, err_size, "include must be 0 or 1");
      } else if (k == "icase") {
        if (!parse_flag(v, &icase)) return fail(err, err_size, "icase must be 0 or 1");
      } else {
        return fail(err, err_size, "unknown parameter '" + k + "' (pattern, include, icase)");
      }
    }
    if (rc < 0) return fail(err, err_size, "malformed configuration (a pattern is at most 4095 bytes)");
    if (!have_pattern) return fail(err, err_size, "a pattern is required: regex(pattern=\"...\")");
    auto* s = new RegexStop();
    std::string error;
    if (!s->re.compile(pattern, icase, &error)) {
      delete s;
      return fail(err, err_size, "bad pattern: " + error);
    }
    s->include = include;
    *state = s;
    return 0;
  } catch (...) {
    return fail(err, err_size, "out of memory");
  }
}

int32_t check(void* state, const char* text, size_t len, int32_t, lmrt_plugin_stop_result* out, char* err,
              size_t err_size) {
  auto* s = static_cast<RegexStop*>(state);
  try {
    if (len < s->scan.pos) s->scan = {};  // the text was not extended: start over
    const std::string_view t(text, len);
    if (s->re.feed(t, &s->scan)) {
      out->action = LMRT_PLUGIN_STOP_STOP;
      out->bytes = s->include ? s->scan.match_end : s->scan.match_start;
      return 0;
    }
    const size_t hold = len - s->re.partial_start(s->scan);
    out->action = hold > 0 ? LMRT_PLUGIN_STOP_HOLD : LMRT_PLUGIN_STOP_CONTINUE;
    out->bytes = hold;
    return 0;
  } catch (...) {
    return fail(err, err_size, "out of memory");
  }
}

void reset(void* state) { static_cast<RegexStop*>(state)->scan = {}; }

int32_t clone(const void* state, void** out, char* err, size_t err_size) {
  try {
    *out = new RegexStop(*static_cast<const RegexStop*>(state));
    return 0;
  } catch (...) {
    return fail(err, err_size, "out of memory");
  }
}

void destroy(void* state) { delete static_cast<RegexStop*>(state); }

const lmrt_plugin_stop_def kRegex = {sizeof(lmrt_plugin_stop_def),
                                     0,
                                     "regex",
                                     "stops when the text matches: regex(pattern=\"...\",include=0,icase=0)",
                                     create,
                                     check,
                                     reset,
                                     clone,
                                     destroy};
const lmrt_plugin_stop_def* const kStops[] = {&kRegex};

}  // namespace

extern "C" LMRT_PLUGIN_EXPORT int32_t lmrt_plugin_init(uint32_t host_abi_version, const lmrt_host_api*,
                                                       lmrt_plugin_descriptor* out) {
  out->abi_version = LMRT_PLUGIN_ABI_VERSION;
  if (!lmrt_plugin_abi_compatible(host_abi_version)) return 1;
  out->name = "regex_stop";
  out->version = "1.0.0";
  out->description = "stop generation when the text matches a regular expression";
  out->stop_criteria = kStops;
  out->n_stop_criteria = 1;
  return 0;
}
