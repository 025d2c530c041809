#include "openai_format.h"

namespace server {

std::string dump_json(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json error_object(const ApiError& e) {
  return json{{"error",
               {{"message", e.message},
                {"type", e.type},
                {"param", e.param.empty() ? json(nullptr) : json(e.param)},
                {"code", e.code.empty() ? json(nullptr) : json(e.code)}}}};
}

std::string LogprobFormatter::token_text(int32_t token) const {
  char buf[256];
  size_t len = 0;
  if (lmrt_token_to_piece(model_, token, buf, sizeof buf, &len) != LMRT_OK) return "";
  return std::string(buf, len);
}

json LogprobFormatter::completion(const std::vector<TokenLogprob>& lps, size_t offset_base) const {
  json tokens = json::array(), values = json::array(), tops = json::array(), offsets = json::array();
  size_t offset = offset_base;
  for (const auto& lp : lps) {
    const std::string text = token_text(lp.token);
    tokens.push_back(text);
    values.push_back(lp.logprob);
    json top = json::object();
    for (const auto& [tok, v] : lp.top) top[token_text(tok)] = v;
    tops.push_back(std::move(top));
    offsets.push_back(offset);
    offset += text.size();
  }
  return json{{"tokens", tokens}, {"token_logprobs", values}, {"top_logprobs", tops}, {"text_offset", offsets}};
}

namespace {
json bytes_of(const std::string& s) {
  json out = json::array();
  for (unsigned char c : s) out.push_back(static_cast<int>(c));
  return out;
}
}  // namespace

json LogprobFormatter::chat(const std::vector<TokenLogprob>& lps) const {
  json content = json::array();
  for (const auto& lp : lps) {
    const std::string text = token_text(lp.token);
    json top = json::array();
    for (const auto& [tok, v] : lp.top) {
      const std::string t = token_text(tok);
      top.push_back(json{{"token", t}, {"logprob", v}, {"bytes", bytes_of(t)}});
    }
    content.push_back(json{{"token", text}, {"logprob", lp.logprob}, {"bytes", bytes_of(text)}, {"top_logprobs", top}});
  }
  return json{{"content", content}, {"refusal", nullptr}};
}

json usage_object(uint64_t prompt_tokens, uint64_t completion_tokens) {
  return json{{"prompt_tokens", prompt_tokens},
              {"completion_tokens", completion_tokens},
              {"total_tokens", prompt_tokens + completion_tokens}};
}

json completion_choice(int index, const std::string& text, const char* finish, const json& logprobs) {
  return json{{"index", index}, {"text", text}, {"logprobs", logprobs}, {"finish_reason", finish}};
}

json chat_choice(int index, const std::string& text, const char* finish, const json& logprobs) {
  return json{{"index", index},
              {"message", {{"role", "assistant"}, {"content", text}, {"refusal", nullptr}}},
              {"logprobs", logprobs},
              {"finish_reason", finish}};
}

json chat_choice_with_tools(int index, const AssistantReply& reply, const std::vector<std::string>& call_ids,
                            const char* finish, const json& logprobs) {
  json message = {{"role", "assistant"}, {"content", reply.content}, {"refusal", nullptr}};
  if (!reply.tool_calls.empty()) {
    if (reply.content.find_first_not_of(" \n\t\r") == std::string::npos) message["content"] = nullptr;
    json calls = json::array();
    for (size_t k = 0; k < reply.tool_calls.size(); ++k)
      calls.push_back(
          json{{"id", call_ids.at(k)},
               {"type", "function"},
               {"function", {{"name", reply.tool_calls[k].name}, {"arguments", reply.tool_calls[k].arguments}}}});
    message["tool_calls"] = calls;
  }
  return json{{"index", index}, {"message", message}, {"logprobs", logprobs}, {"finish_reason", finish}};
}

json full_response(Endpoint ep, const ResponseMeta& meta, const json& choices, const json& usage) {
  return json{{"id", meta.id},
              {"object", ep == Endpoint::kChat ? "chat.completion" : "text_completion"},
              {"created", meta.created},
              {"model", meta.model},
              {"system_fingerprint", "lmrt"},
              {"choices", choices},
              {"usage", usage}};
}

json chunk(Endpoint ep, const ResponseMeta& meta, int index, const std::string* text, bool with_role,
           const char* finish, const json& logprobs) {
  json choice;
  if (ep == Endpoint::kChat) {
    json delta = json::object();
    if (with_role) delta["role"] = "assistant";
    if (text != nullptr) delta["content"] = *text;
    choice = json{{"index", index}, {"delta", delta}, {"logprobs", logprobs}};
  } else {
    choice = json{{"index", index}, {"text", text != nullptr ? *text : ""}, {"logprobs", logprobs}};
  }
  choice["finish_reason"] = finish != nullptr ? json(finish) : json(nullptr);
  return json{{"id", meta.id},
              {"object", ep == Endpoint::kChat ? "chat.completion.chunk" : "text_completion"},
              {"created", meta.created},
              {"model", meta.model},
              {"system_fingerprint", "lmrt"},
              {"choices", json::array({choice})}};
}

json tool_calls_chunk(const ResponseMeta& meta, int index, const json& calls) {
  json choice = {
      {"index", index}, {"delta", {{"tool_calls", calls}}}, {"logprobs", nullptr}, {"finish_reason", nullptr}};
  return json{{"id", meta.id},       {"object", "chat.completion.chunk"}, {"created", meta.created},
              {"model", meta.model}, {"system_fingerprint", "lmrt"},      {"choices", json::array({choice})}};
}

json tool_call_delta(const ToolCallStream::Delta& d, const std::string& id) {
  if (!d.name.empty())
    return json::array({json{
        {"index", d.call}, {"id", id}, {"type", "function"}, {"function", {{"name", d.name}, {"arguments", ""}}}}});
  return json::array({json{{"index", d.call}, {"function", {{"arguments", d.text}}}}});
}

json usage_chunk(Endpoint ep, const ResponseMeta& meta, const json& usage) {
  return json{{"id", meta.id},
              {"object", ep == Endpoint::kChat ? "chat.completion.chunk" : "text_completion"},
              {"created", meta.created},
              {"model", meta.model},
              {"system_fingerprint", "lmrt"},
              {"choices", json::array()},
              {"usage", usage}};
}

}  // namespace server
