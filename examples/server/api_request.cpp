#include "api_request.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "bounded_json.h"
#include "tool_call_grammar.h"

namespace server {
namespace {

using json = nlohmann::json;

constexpr int kMaxChoices = 16;
constexpr size_t kMaxStops = 16;
constexpr size_t kMaxPrompts = 16;

ApiError bad(const std::string& param, const std::string& message) {
  ApiError e;
  e.message = message;
  e.param = param;
  return e;
}

// Reads optional fields of the body; null counts as absent, as OpenAI's clients send it.
class Fields {
 public:
  explicit Fields(const json& body) : body_(body) {}

  const json* get(const char* name) const {
    auto it = body_.find(name);
    if (it == body_.end() || it->is_null()) return nullptr;
    return &*it;
  }

  std::optional<ApiError> number(const char* name, double lo, double hi, float* out) const {
    const json* v = get(name);
    if (v == nullptr) return std::nullopt;
    if (!v->is_number()) return bad(name, std::string("'") + name + "' must be a number");
    const double d = v->get<double>();
    if (!(d >= lo && d <= hi))
      return bad(name, std::string("'") + name + "' must be between " + fmt(lo) + " and " + fmt(hi));
    *out = static_cast<float>(d);
    return std::nullopt;
  }

  std::optional<ApiError> integer(const char* name, long long lo, long long hi, long long* out) const {
    const json* v = get(name);
    if (v == nullptr) return std::nullopt;
    if (!v->is_number_integer()) return bad(name, std::string("'") + name + "' must be an integer");
    long long x = 0;
    if (v->is_number_unsigned()) {
      const auto u = v->get<unsigned long long>();
      x = u > static_cast<unsigned long long>(hi) ? hi + (hi < std::numeric_limits<long long>::max() ? 1 : 0)
                                                  : static_cast<long long>(u);
    } else {
      x = v->get<long long>();
    }
    if (x < lo || x > hi)
      return bad(name,
                 std::string("'") + name + "' must be between " + std::to_string(lo) + " and " + std::to_string(hi));
    *out = x;
    return std::nullopt;
  }

  std::optional<ApiError> boolean(const char* name, bool* out) const {
    const json* v = get(name);
    if (v == nullptr) return std::nullopt;
    if (!v->is_boolean()) return bad(name, std::string("'") + name + "' must be a boolean");
    *out = v->get<bool>();
    return std::nullopt;
  }

 private:
  static std::string fmt(double d) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", d);
    return buf;
  }
  const json& body_;
};

#define RETURN_IF_ERROR(expr)        \
  do {                               \
    if (auto e_ = (expr)) return e_; \
  } while (0)

// The C API takes these fields as NUL-terminated strings: a NUL inside would silently cut them.
std::optional<ApiError> no_nul(const std::string& param, const std::string& value) {
  if (value.find('\0') == std::string::npos) return std::nullopt;
  return bad(param, "'" + param + "' must not contain a NUL character");
}

std::optional<ApiError> parse_stop(const Fields& f, std::vector<std::string>* out) {
  const json* v = f.get("stop");
  if (v == nullptr) return std::nullopt;
  if (v->is_string()) {
    RETURN_IF_ERROR(no_nul("stop", v->get<std::string>()));
    if (!v->get<std::string>().empty()) out->push_back(v->get<std::string>());
    return std::nullopt;
  }
  if (!v->is_array()) return bad("stop", "'stop' must be a string or an array of strings");
  if (v->size() > kMaxStops) return bad("stop", "'stop' has more than " + std::to_string(kMaxStops) + " strings");
  for (const auto& s : *v) {
    if (!s.is_string()) return bad("stop", "'stop' must be a string or an array of strings");
    RETURN_IF_ERROR(no_nul("stop", s.get<std::string>()));
    if (!s.get<std::string>().empty()) out->push_back(s.get<std::string>());
  }
  return std::nullopt;
}

std::optional<ApiError> parse_logit_bias(const Fields& f, uint32_t n_vocab, std::vector<lmrt_logit_bias>* out) {
  const json* v = f.get("logit_bias");
  if (v == nullptr) return std::nullopt;
  if (!v->is_object()) return bad("logit_bias", "'logit_bias' must be an object mapping token ids to numbers");
  for (auto it = v->begin(); it != v->end(); ++it) {
    const std::string& key = it.key();
    // Decimal digits only, without sign, space or leading zero: strtoll also read " 1", "+1" and "01"
    // as token 1, so one token could be biased twice, which the generation refused only after a
    // stream's 200. Written one way only, two keys are two tokens.
    const bool decimal = !key.empty() && key.size() <= 10 && key.find_first_not_of("0123456789") == std::string::npos &&
                         (key == "0" || key[0] != '0');
    const long long id = decimal ? std::stoll(key) : -1;
    if (id < 0 || id >= static_cast<long long>(n_vocab))
      return bad("logit_bias", "'logit_bias' key '" + key + "' is not a token id of this model (0.." +
                                   std::to_string(n_vocab - 1) + ")");
    if (!it.value().is_number()) return bad("logit_bias", "'logit_bias' values must be numbers");
    const double b = it.value().get<double>();
    if (!(b >= -100.0 && b <= 100.0)) return bad("logit_bias", "'logit_bias' values must be between -100 and 100");
    // OpenAI documents -100 as banning the token.
    const float bias = b <= -100.0 ? -std::numeric_limits<float>::infinity() : static_cast<float>(b);
    out->push_back(lmrt_logit_bias{static_cast<int32_t>(id), bias});
  }
  return std::nullopt;
}

std::optional<ApiError> parse_message_content(const json& content, const std::string& param, json* out) {
  if (content.is_null() || content.is_string()) {
    *out = content;
    return std::nullopt;
  }
  if (!content.is_array()) return bad(param, "'" + param + "' must be a string or an array of content parts");
  std::string text;
  for (const auto& part : content) {
    if (!part.is_object() || !part.contains("type") || !part["type"].is_string())
      return bad(param, "'" + param + "' parts must be objects with a 'type'");
    if (part["type"] != "text") return bad(param, "'" + param + "': only text content parts are supported");
    if (!part.contains("text") || !part["text"].is_string())
      return bad(param, "'" + param + "' text parts need a string 'text'");
    text += part["text"].get<std::string>();
  }
  *out = text;
  return std::nullopt;
}

bool valid_function_name(const json& name) {
  if (!name.is_string()) return false;
  const std::string& s = name.get_ref<const std::string&>();
  if (s.empty() || s.size() > 64) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  return true;
}

// An assistant message's tool_calls as templates read them: function.arguments as the object the
// JSON string holds (transformers' templates write it with tojson), as llama.cpp passes it.
std::optional<ApiError> parse_tool_calls_field(const json& calls, const std::string& param, json* out) {
  if (!calls.is_array()) return bad(param, "'" + param + "' must be an array");
  *out = json::array();
  for (size_t k = 0; k < calls.size(); ++k) {
    const json& c = calls[k];
    const std::string at = param + "[" + std::to_string(k) + "]";
    if (!c.is_object() || !c.contains("function") || !c["function"].is_object())
      return bad(at, "'" + at + "' must be an object with a 'function'");
    const json& fn = c["function"];
    if (!fn.contains("name") || !fn["name"].is_string()) return bad(at, "'" + at + ".function.name' must be a string");
    json args = fn.contains("arguments") ? fn["arguments"] : json::object();
    if (args.is_string()) {
      // Too deep or not JSON: the template gets the string as it came.
      json parsed;
      if (parse_bounded_json(args.get_ref<const std::string&>(), &parsed) == JsonParse::kOk) args = std::move(parsed);
    }
    json call = {{"type", "function"}, {"function", {{"name", fn["name"]}, {"arguments", args}}}};
    if (c.contains("id")) {
      if (!c["id"].is_string()) return bad(at, "'" + at + ".id' must be a string");
      call["id"] = c["id"];
    }
    out->push_back(std::move(call));
  }
  return std::nullopt;
}

// The messages as the template reads them (OpenAI's fields, normalised).
std::optional<ApiError> parse_messages(const Fields& f, json* out) {
  const json* v = f.get("messages");
  if (v == nullptr) return bad("messages", "'messages' is required");
  if (!v->is_array() || v->empty()) return bad("messages", "'messages' must be a non-empty array");
  *out = json::array();
  for (size_t i = 0; i < v->size(); ++i) {
    const json& m = (*v)[i];
    const std::string param = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) return bad(param, "'" + param + "' must be an object");
    auto role = m.find("role");
    if (role == m.end() || !role->is_string()) return bad(param + ".role", "'" + param + ".role' must be a string");
    const std::string r = role->get<std::string>();
    if (r != "system" && r != "user" && r != "assistant" && r != "developer" && r != "tool")
      return bad(param + ".role", "'" + param + ".role' must be system, developer, user, assistant or tool");
    json msg = {{"role", r == "developer" ? "system" : r}, {"content", nullptr}};
    if (auto c = m.find("content"); c != m.end())
      RETURN_IF_ERROR(parse_message_content(*c, param + ".content", &msg["content"]));
    if (r == "assistant")
      if (auto tc = m.find("tool_calls"); tc != m.end() && !tc->is_null())
        RETURN_IF_ERROR(parse_tool_calls_field(*tc, param + ".tool_calls", &msg["tool_calls"]));
    for (const char* key : {"tool_call_id", "name"}) {
      auto it = m.find(key);
      if (it == m.end() || it->is_null()) continue;
      if (!it->is_string()) return bad(param + "." + key, "'" + param + "." + key + "' must be a string");
      msg[key] = *it;
    }
    if (r == "tool" && !msg.contains("tool_call_id"))
      return bad(param + ".tool_call_id", "'" + param + ".tool_call_id' is required in a tool message");
    out->push_back(std::move(msg));
  }
  return std::nullopt;
}

// tools and tool_choice. *tools receives the tools the template sees (none for "none"), *forced
// the tools a call is forced among (empty unless "required" or a named function).
std::optional<ApiError> parse_tools(const Fields& f, json* tools, json* forced, bool* parse_calls) {
  *tools = json();
  *forced = json::array();
  *parse_calls = false;
  const json* v = f.get("tools");
  if (v != nullptr) {
    if (!v->is_array()) return bad("tools", "'tools' must be an array of function tools");
    for (size_t i = 0; i < v->size(); ++i) {
      const json& t = (*v)[i];
      const std::string param = "tools[" + std::to_string(i) + "]";
      if (!t.is_object() || t.value("type", "") != "function" || !t.contains("function") || !t["function"].is_object())
        return bad(param, "'" + param + "' must be {\"type\": \"function\", \"function\": {...}}");
      const json& fn = t["function"];
      if (!fn.contains("name") || !valid_function_name(fn["name"]))
        return bad(param + ".function.name",
                   "'" + param + ".function.name' must be 1 to 64 letters, digits, '_' or '-'");
      if (fn.contains("parameters") && !fn["parameters"].is_null() && !fn["parameters"].is_object())
        return bad(param + ".function.parameters", "'" + param + ".function.parameters' must be a JSON Schema object");
    }
    if (!v->empty()) *tools = *v;
  }
  const json* choice = f.get("tool_choice");
  std::string mode = tools->is_null() ? "none" : "auto";
  std::string named;
  if (choice != nullptr) {
    if (choice->is_string()) {
      mode = choice->get<std::string>();
      if (mode != "none" && mode != "auto" && mode != "required")
        return bad("tool_choice",
                   "'tool_choice' must be \"none\", \"auto\", \"required\" or "
                   "{\"type\": \"function\", \"function\": {\"name\": ...}}, not \"" +
                       mode + "\"");
    } else if (choice->is_object() && choice->value("type", "") == "function" && choice->contains("function") &&
               (*choice)["function"].is_object() && (*choice)["function"].contains("name") &&
               (*choice)["function"]["name"].is_string()) {
      mode = "named";
      named = (*choice)["function"]["name"].get<std::string>();
    } else {
      return bad("tool_choice",
                 "'tool_choice' must be \"none\", \"auto\", \"required\" or "
                 "{\"type\": \"function\", \"function\": {\"name\": ...}}");
    }
  }
  if (mode != "none" && tools->is_null())
    return bad("tool_choice", "'tool_choice' \"" + mode + "\" needs a non-empty 'tools'");
  if (mode == "none") {
    *tools = json();
    return std::nullopt;
  }
  *parse_calls = true;
  if (mode == "required") *forced = *tools;
  if (mode == "named") {
    for (const json& t : *tools)
      if (t["function"]["name"] == named) forced->push_back(t);
    if (forced->empty()) return bad("tool_choice", "'tool_choice' names '" + named + "', which is not in 'tools'");
  }
  return std::nullopt;
}

// The grammar sampler's own checks, made before any answer is under way: a stream's 200 cannot be
// taken back when the generation refuses the grammar.
std::optional<ApiError> check_gbnf(const std::string& param, const std::string& gbnf) {
  char err[512] = "";
  if (lmrt_grammar_check(gbnf.c_str(), err, sizeof err) == LMRT_OK) return std::nullopt;
  return bad(param, "'" + param + "': " + err);
}

std::optional<ApiError> check_schema(const std::string& param, const std::string& schema) {
  std::string error;
  auto gbnf = json_schema_grammar(schema, &error);
  if (!gbnf) return bad(param, "'" + param + "': " + error);
  return check_gbnf(param, *gbnf);
}

// OpenAI's response_format, and llama.cpp's grammar and json_schema fields.
std::optional<ApiError> parse_constraints(const Fields& f, SamplingParams* s) {
  if (const json* rf = f.get("response_format")) {
    if (!rf->is_object() || !rf->contains("type") || !(*rf)["type"].is_string())
      return bad("response_format", "'response_format' must be an object with a string 'type'");
    const std::string type = (*rf)["type"].get<std::string>();
    if (type == "json_object") {
      s->json_schema = R"({"type":"object"})";
    } else if (type == "json_schema") {
      auto js = rf->find("json_schema");
      if (js == rf->end() || !js->is_object())
        return bad("response_format.json_schema", "'response_format.json_schema' must be an object");
      auto schema = js->find("schema");
      if (schema != js->end() && !schema->is_null() && !schema->is_object() && !schema->is_boolean())
        return bad("response_format.json_schema.schema", "'response_format.json_schema.schema' must be a JSON Schema");
      s->json_schema = schema == js->end() || schema->is_null() ? R"({"type":"object"})" : schema->dump();
      RETURN_IF_ERROR(check_schema("response_format.json_schema.schema", s->json_schema));
    } else if (type != "text") {
      return bad("response_format.type",
                 "'response_format.type' \"" + type + "\" is not supported (text, json_object, json_schema)");
    }
  }
  if (const json* g = f.get("grammar")) {
    if (!g->is_string()) return bad("grammar", "'grammar' must be a string (GBNF)");
    if (!s->json_schema.empty()) return bad("grammar", "'grammar' cannot be combined with 'response_format' JSON");
    s->grammar = g->get<std::string>();
    RETURN_IF_ERROR(no_nul("grammar", s->grammar));
    RETURN_IF_ERROR(check_gbnf("grammar", s->grammar));
  }
  if (const json* js = f.get("json_schema")) {
    if (!js->is_object()) return bad("json_schema", "'json_schema' must be a JSON Schema object");
    if (!s->json_schema.empty() || !s->grammar.empty())
      return bad("json_schema", "'json_schema' cannot be combined with 'grammar' or 'response_format' JSON");
    s->json_schema = js->dump();
    RETURN_IF_ERROR(check_schema("json_schema", s->json_schema));
  }
  return std::nullopt;
}

std::optional<ApiError> parse_chat(const Fields& f, const ModelFacts& model, ApiRequest* out) {
  json messages, tools, forced;
  RETURN_IF_ERROR(parse_messages(f, &messages));
  RETURN_IF_ERROR(parse_tools(f, &tools, &forced, &out->parse_tool_calls));
  if (const json* v = f.get("parallel_tool_calls")) {
    if (!v->is_boolean()) return bad("parallel_tool_calls", "'parallel_tool_calls' must be true or false");
    out->parallel_tool_calls = v->get<bool>();
  }
  if (model.templates == nullptr) {
    ApiError e = bad("", "the server has no chat template");
    e.status = 500;
    e.type = "server_error";
    return e;
  }
  const ChatTemplates& t = *model.templates;
  out->tool_format = t.tool_format;
  RenderError why;
  auto prompt = render_chat(model.model, t, messages.dump(), tools.is_null() ? "" : tools.dump(), &why);
  if (!prompt) {
    ApiError e = bad("messages", why.message);
    if (!why.client_fault) {
      e.status = 500;
      e.type = "server_error";
      e.param.clear();
    }
    return e;
  }
  out->chat_tokens = std::move(prompt->tokens);
  out->prompts.push_back(std::move(prompt->text));
  for (const auto& s : t.stops) out->sampling.stop.push_back(s);
  if (!forced.empty()) {
    if (!out->sampling.grammar.empty() || !out->sampling.json_schema.empty())
      return bad("tool_choice", "a required tool call cannot be combined with 'response_format' JSON or 'grammar'");
    std::string error;
    auto grammar = tool_call_grammar(t.tool_format, forced, &error);
    if (!grammar) return bad("tools", error);
    RETURN_IF_ERROR(check_gbnf("tools", *grammar));
    out->sampling.grammar = std::move(*grammar);
  }
  return std::nullopt;
}

std::optional<ApiError> parse_prompt(const Fields& f, ApiRequest* out) {
  const json* v = f.get("prompt");
  if (v == nullptr) return bad("prompt", "'prompt' is required");
  if (v->is_string()) {
    out->prompts.push_back(v->get<std::string>());
    return std::nullopt;
  }
  if (v->is_array() && !v->empty() && v->size() <= kMaxPrompts) {
    for (const auto& p : *v) {
      if (!p.is_string())
        return bad("prompt", "'prompt' must be a string or an array of strings (token arrays are not supported)");
      out->prompts.push_back(p.get<std::string>());
    }
    return std::nullopt;
  }
  return bad("prompt", "'prompt' must be a string or an array of 1.." + std::to_string(kMaxPrompts) + " strings");
}

std::optional<ApiError> parse_fields(const json& body, Endpoint endpoint, const ModelFacts& model, ApiRequest* out) {
  const Fields f(body);
  SamplingParams& s = out->sampling;
  out->endpoint = endpoint;

  if (const json* m = f.get("model"); m != nullptr && !m->is_string()) return bad("model", "'model' must be a string");

  long long n = 1;
  RETURN_IF_ERROR(f.integer("n", 1, kMaxChoices, &n));
  out->n = static_cast<int>(n);
  RETURN_IF_ERROR(f.boolean("stream", &out->stream));
  if (const json* so = f.get("stream_options")) {
    if (!so->is_object()) return bad("stream_options", "'stream_options' must be an object");
    auto iu = so->find("include_usage");
    if (iu != so->end() && !iu->is_null()) {
      if (!iu->is_boolean()) return bad("stream_options.include_usage", "'include_usage' must be a boolean");
      out->include_usage = iu->get<bool>();
    }
  }

  // OpenAI's defaults: 16 tokens for completions, up to the context for chat.
  long long max_tokens = endpoint == Endpoint::kCompletions ? 16 : static_cast<long long>(model.n_ctx);
  const long long max_allowed = std::numeric_limits<int32_t>::max();
  if (endpoint == Endpoint::kChat) RETURN_IF_ERROR(f.integer("max_completion_tokens", 1, max_allowed, &max_tokens));
  if (const json* mt = f.get("max_tokens")) {
    if (!mt->is_number_integer()) return bad("max_tokens", "'max_tokens' must be an integer");
    RETURN_IF_ERROR(f.integer("max_tokens", 1, max_allowed, &max_tokens));
  }
  // The server's cap bounds the work one request can ask for (context_shift could go on forever).
  const long long cap = model.max_tokens_limit != 0 ? model.max_tokens_limit : model.n_ctx;
  if (cap > 0) max_tokens = std::min(max_tokens, cap);
  s.max_tokens = static_cast<int32_t>(max_tokens);

  RETURN_IF_ERROR(f.number("temperature", 0.0, 100.0, &s.temperature));
  RETURN_IF_ERROR(f.number("top_p", 0.0, 1.0, &s.top_p));
  if (s.top_p <= 0.0f) return bad("top_p", "'top_p' must be greater than 0");
  long long top_k = 0;
  RETURN_IF_ERROR(f.integer("top_k", 0, 1 << 30, &top_k));
  s.top_k = static_cast<int32_t>(top_k);
  RETURN_IF_ERROR(f.number("min_p", 0.0, 1.0, &s.min_p));
  RETURN_IF_ERROR(f.number("typical_p", 0.0, 1.0, &s.typical_p));
  if (s.typical_p <= 0.0f) return bad("typical_p", "'typical_p' must be greater than 0");
  RETURN_IF_ERROR(f.number("repeat_penalty", 0.0, 100.0, &s.repeat_penalty));
  if (s.repeat_penalty <= 0.0f) return bad("repeat_penalty", "'repeat_penalty' must be greater than 0");
  long long last_n = 64;
  RETURN_IF_ERROR(f.integer("repeat_last_n", 0, 1 << 20, &last_n));
  s.repeat_last_n = static_cast<int32_t>(last_n);
  RETURN_IF_ERROR(f.number("presence_penalty", -2.0, 2.0, &s.presence_penalty));
  RETURN_IF_ERROR(f.number("frequency_penalty", -2.0, 2.0, &s.frequency_penalty));
  if (const json* seed = f.get("seed")) {
    if (!seed->is_number_integer()) return bad("seed", "'seed' must be an integer");
    s.seed = seed->is_number_unsigned() ? seed->get<uint64_t>() : static_cast<uint64_t>(seed->get<int64_t>());
  }
  if (const json* spec = f.get("samplers")) {
    if (!spec->is_string()) return bad("samplers", "'samplers' must be a string (an lmrt sampler chain)");
    s.samplers = spec->get<std::string>();
    RETURN_IF_ERROR(no_nul("samplers", s.samplers));
    char err[512] = "";
    lmrt_sampler* probe = nullptr;
    if (lmrt_sampler_create(s.samplers.c_str(), 0, &probe, err, sizeof err) != LMRT_OK)
      return bad("samplers", std::string("'samplers': ") + err);
    lmrt_sampler_free(probe);
  }
  RETURN_IF_ERROR(f.boolean("context_shift", &s.context_shift));
  RETURN_IF_ERROR(parse_constraints(f, &s));
  RETURN_IF_ERROR(parse_logit_bias(f, model.n_vocab, &s.logit_bias));
  if (!s.logit_bias.empty() && !s.samplers.empty())
    return bad("logit_bias", "'logit_bias' cannot be combined with 'samplers'; add logit_bias(...) to the chain");

  if (endpoint == Endpoint::kCompletions) {
    long long lp = -1;
    if (const json* v = f.get("logprobs"); v != nullptr && !v->is_number_integer())
      return bad("logprobs", "'logprobs' must be an integer (0.." + std::to_string(LMRT_MAX_TOP_LOGPROBS) + ")");
    RETURN_IF_ERROR(f.integer("logprobs", 0, LMRT_MAX_TOP_LOGPROBS, &lp));
    s.logprobs = static_cast<int32_t>(lp);
    RETURN_IF_ERROR(f.boolean("echo", &out->echo));
    RETURN_IF_ERROR(parse_prompt(f, out));
  } else {
    bool want = false;
    RETURN_IF_ERROR(f.boolean("logprobs", &want));
    long long top = 0;
    RETURN_IF_ERROR(f.integer("top_logprobs", 0, LMRT_MAX_TOP_LOGPROBS, &top));
    if (f.get("top_logprobs") != nullptr && !want)
      return bad("top_logprobs", "'top_logprobs' needs 'logprobs' set to true");
    s.logprobs = want ? static_cast<int32_t>(top) : -1;
    RETURN_IF_ERROR(parse_chat(f, model, out));
  }
  // User stops go after the template's; parse_stop appends.
  RETURN_IF_ERROR(parse_stop(f, &s.stop));
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> parse_api_request(const std::string& body, Endpoint endpoint, const ModelFacts& model,
                                          ApiRequest* out) {
  try {
    json parsed;
    switch (parse_bounded_json(body, &parsed)) {
      case JsonParse::kOk:
        break;
      case JsonParse::kInvalid:
        return bad("", "the request body is not valid JSON");
      case JsonParse::kTooDeep:
        return bad("", "the request body nests JSON deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    }
    if (!parsed.is_object()) return bad("", "the request body must be a JSON object");
    out->sampling.plugins = model.plugins;
    return parse_fields(parsed, endpoint, model, out);
  } catch (const std::exception& e) {
    return bad("", std::string("could not read the request: ") + e.what());
  }
}

}  // namespace server
