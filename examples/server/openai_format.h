// OpenAI response, chunk and error objects built from lmrt results.
#pragma once

#include <lmrt/lmrt.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api_request.h"
#include "generation.h"
#include "tool_calls.h"

namespace server {

using json = nlohmann::json;

// Serializes without throwing on invalid UTF-8 (a byte token's text): bad bytes become U+FFFD.
std::string dump_json(const json& j);

// {"error": {"message", "type", "param", "code"}}.
json error_object(const ApiError& e);

// Identity shared by every object of one response.
struct ResponseMeta {
  std::string id;  // "cmpl-..." or "chatcmpl-..."
  int64_t created;
  std::string model;
};

// Builds the logprobs objects; needs the model for token texts.
class LogprobFormatter {
 public:
  explicit LogprobFormatter(const lmrt_model* model) : model_(model) {}
  // Completions: {"tokens", "token_logprobs", "top_logprobs", "text_offset"}; text_offset counts
  // bytes from `offset_base`.
  json completion(const std::vector<TokenLogprob>& lps, size_t offset_base) const;
  // Chat: {"content": [{"token", "logprob", "bytes", "top_logprobs"}], "refusal": null}.
  json chat(const std::vector<TokenLogprob>& lps) const;
  std::string token_text(int32_t token) const;

 private:
  const lmrt_model* model_;
};

json usage_object(uint64_t prompt_tokens, uint64_t completion_tokens);

// One choice of a non-streamed response.
json completion_choice(int index, const std::string& text, const char* finish, const json& logprobs);
json chat_choice(int index, const std::string& text, const char* finish, const json& logprobs);
// A chat choice whose reply was read for tool calls: content (null when only calls were written),
// tool_calls [{id (call_ids[k]), type "function", function {name, arguments}}] when there are any.
json chat_choice_with_tools(int index, const AssistantReply& reply, const std::vector<std::string>& call_ids,
                            const char* finish, const json& logprobs);
json full_response(Endpoint ep, const ResponseMeta& meta, const json& choices, const json& usage);

// One streamed chunk: `text` (null for none), `finish` (nullptr for none), role only in the
// first chat chunk of a choice.
json chunk(Endpoint ep, const ResponseMeta& meta, int index, const std::string* text, bool with_role,
           const char* finish, const json& logprobs);
// A streamed chat chunk of tool-call deltas: `calls` is delta.tool_calls ([{index, id?, type?,
// function {name?, arguments}}]).
json tool_calls_chunk(const ResponseMeta& meta, int index, const json& calls);
// delta.tool_calls for one call delta of a ToolCallStream as OpenAI streams them: the first (with
// the name) [{index, id, type "function", function {name, arguments ""}}], then [{index, function
// {arguments: fragment}}].
json tool_call_delta(const ToolCallStream::Delta& d, const std::string& id);
// The final chunk carrying usage (stream_options.include_usage).
json usage_chunk(Endpoint ep, const ResponseMeta& meta, const json& usage);

}  // namespace server
