// apply_chat_template's variables around the Jinja interpreter, with every failure as a Status.
#include "runtime/chat/chat_template.h"

#include <new>
#include <nlohmann/json.hpp>

#include "runtime/chat/jinja_interpreter.h"
#include "runtime/chat/jinja_json.h"
#include "runtime/chat/jinja_parser.h"
#include "runtime/util/bounded_json.h"

namespace lmrt {

namespace {

Status parse_json(std::string_view text, const char* what, nlohmann::ordered_json* out) {
  return parse_bounded_json(text, what, out);
}

}  // namespace

Status render_chat_template(const ChatTemplateRequest& r, std::string* out) {
  ByteRanges caller;
  return render_chat_template(r, out, &caller);
}

Status render_chat_template(const ChatTemplateRequest& r, std::string* out, ByteRanges* caller) {
  using jinja::Value;
  nlohmann::ordered_json messages, tools, extra;
  LMRT_RETURN_IF_ERROR(parse_json(r.messages_json, "messages", &messages));
  if (!messages.is_array()) return Error(Code::invalid_argument, "messages must be a JSON array");
  if (!r.tools_json.empty()) {
    LMRT_RETURN_IF_ERROR(parse_json(r.tools_json, "tools", &tools));
    if (!tools.is_array() && !tools.is_null()) return Error(Code::invalid_argument, "tools must be a JSON array");
  }
  if (!r.extra_json.empty()) {
    LMRT_RETURN_IF_ERROR(parse_json(r.extra_json, "extra variables", &extra));
    if (!extra.is_object()) return Error(Code::invalid_argument, "extra variables must be a JSON object");
  }
  try {
    jinja::Dict vars;
    vars.set(Value("messages"), jinja::from_json(messages));
    vars.set(Value("tools"), r.tools_json.empty() ? Value::none() : jinja::from_json(tools));
    vars.set(Value("documents"), Value::none());
    vars.set(Value("add_generation_prompt"), Value(r.add_generation_prompt));
    if (r.bos_token) vars.set(Value("bos_token"), Value(*r.bos_token));
    if (r.eos_token) vars.set(Value("eos_token"), Value(*r.eos_token));
    if (extra.is_object())
      for (auto it = extra.begin(); it != extra.end(); ++it) vars.set(Value(it.key()), jinja::from_json(it.value()));
    const jinja::Body body = jinja::parse_template(std::string(r.template_text));
    jinja::Interpreter interpreter;
    jinja::TaintedText text = interpreter.render_with_provenance(body, vars);
    *out = std::move(text.text);
    *caller = std::move(text.caller);
  } catch (const jinja::JinjaError& e) {
    if (e.raised()) return Error(Code::bad_format, std::string("raise_exception: ") + e.what());
    return Error(Code::bad_format, std::string("chat template: ") + e.what());
  } catch (const std::bad_alloc&) {
    throw;                             // the ABI layer reports out_of_memory
  } catch (const std::exception& e) {  // a number the standard library could not convert, ...
    return Error(Code::bad_format, std::string("chat template: ") + e.what());
  }
  return Status::Ok();
}

}  // namespace lmrt
