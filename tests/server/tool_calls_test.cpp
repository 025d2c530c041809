// The server's tool-call reading (examples/server/tool_calls.cpp) on literal replies in each
// format as the models write them, and the grammar that forces a call (tool_call_grammar.cpp),
// checked by generating from it with the library's grammar sampler.
#include "tool_calls.h"

#include <gtest/gtest.h>
#include <lmrt/lmrt.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tool_call_grammar.h"

namespace server {
namespace {

using json = nlohmann::json;

void expect_call(const ToolCall& c, const std::string& name, const json& args) {
  EXPECT_EQ(c.name, name);
  EXPECT_EQ(json::parse(c.arguments), args) << c.arguments;
}

// Qwen2.5-7B-Instruct's reply to "weather in Paris and Berlin?" with its own template's tools.
TEST(ToolCallParser, HermesQwenBlocksWithTextBefore) {
  const AssistantReply r = parse_assistant_reply(
      ToolCallFormat::kHermes,
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Berlin\", \"unit\": \"c\"}}\n</tool_call>");
  EXPECT_EQ(r.content, "Let me check.\n");
  ASSERT_EQ(r.tool_calls.size(), 2u);
  expect_call(r.tool_calls[0], "get_weather", {{"city", "Paris"}});
  expect_call(r.tool_calls[1], "get_weather", {{"city", "Berlin"}, {"unit", "c"}});
}

TEST(ToolCallParser, HermesUnclosedLastBlockAndStringArguments) {
  const AssistantReply r = parse_assistant_reply(
      ToolCallFormat::kHermes, "<tool_call>\n{\"name\": \"f\", \"arguments\": \"{\\\"x\\\": [1, 2]}\"}");
  EXPECT_EQ(r.content, "");
  ASSERT_EQ(r.tool_calls.size(), 1u);
  expect_call(r.tool_calls[0], "f", {{"x", {1, 2}}});
}

TEST(ToolCallParser, MalformedCallsStayContent) {
  for (const std::string text : {"<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": }\n</tool_call>",
                                 "<tool_call>{\"arguments\": {}}</tool_call>", "<tool_call>not json</tool_call>",
                                 "Use <tool_call> tags to call tools."}) {
    const AssistantReply r = parse_assistant_reply(ToolCallFormat::kHermes, text);
    EXPECT_TRUE(r.tool_calls.empty()) << text;
    EXPECT_EQ(r.content, text);
  }
}

// Llama 3.1 8B Instruct: a bare JSON call (its <|python_tag|> is a control token, empty in text),
// or after the tag when the text shows it; several calls separated by ';'.
TEST(ToolCallParser, Llama3JsonWithParameters) {
  AssistantReply r = parse_assistant_reply(
      ToolCallFormat::kLlama3, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"San Francisco, CA\"}}");
  EXPECT_EQ(r.content, "");
  ASSERT_EQ(r.tool_calls.size(), 1u);
  expect_call(r.tool_calls[0], "get_weather", {{"city", "San Francisco, CA"}});
  r = parse_assistant_reply(ToolCallFormat::kLlama3,
                            "<|python_tag|>{\"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", \"parameters\": "
                            "{\"n\": 1}}");
  ASSERT_EQ(r.tool_calls.size(), 2u);
  expect_call(r.tool_calls[0], "a", json::object());
  expect_call(r.tool_calls[1], "b", {{"n", 1}});
  r = parse_assistant_reply(ToolCallFormat::kLlama3, "The answer is {\"name\": \"x\"}.");
  EXPECT_TRUE(r.tool_calls.empty());
  EXPECT_EQ(r.content, "The answer is {\"name\": \"x\"}.");
}

// Mistral 7B Instruct v0.3 / Nemo: [TOOL_CALLS] then a JSON array (with an id on Nemo).
TEST(ToolCallParser, MistralToolCallsArray) {
  AssistantReply r = parse_assistant_reply(
      ToolCallFormat::kMistral,
      "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}, \"id\": \"abc123def\"}, "
      "{\"name\": \"get_time\", \"arguments\": {}}]");
  EXPECT_EQ(r.content, "");
  ASSERT_EQ(r.tool_calls.size(), 2u);
  expect_call(r.tool_calls[0], "get_weather", {{"city", "Paris"}});
  expect_call(r.tool_calls[1], "get_time", json::object());
  r = parse_assistant_reply(ToolCallFormat::kMistral, " [{\"name\": \"f\", \"arguments\": {\"a\": true}}]");
  ASSERT_EQ(r.tool_calls.size(), 1u);
  expect_call(r.tool_calls[0], "f", {{"a", true}});
  r = parse_assistant_reply(ToolCallFormat::kMistral, "[1, 2]");
  EXPECT_TRUE(r.tool_calls.empty());
}

TEST(ToolCallParser, GenericJsonShapes) {
  AssistantReply r = parse_assistant_reply(ToolCallFormat::kGeneric,
                                           "{\"tool_calls\": [{\"name\": \"f\", \"arguments\": {\"q\": \"x\"}}]}");
  ASSERT_EQ(r.tool_calls.size(), 1u);
  expect_call(r.tool_calls[0], "f", {{"q", "x"}});
  r = parse_assistant_reply(ToolCallFormat::kGeneric,
                            "```json\n{\"tool_call\": {\"name\": \"g\", \"arguments\": {}}}\n```\n");
  ASSERT_EQ(r.tool_calls.size(), 1u);
  expect_call(r.tool_calls[0], "g", json::object());
  r = parse_assistant_reply(ToolCallFormat::kGeneric, "{\"name\": \"h\", \"arguments\": {\"k\": null}}");
  ASSERT_EQ(r.tool_calls.size(), 1u);
  r = parse_assistant_reply(ToolCallFormat::kGeneric, "{\"answer\": 42}");
  EXPECT_TRUE(r.tool_calls.empty());
  EXPECT_EQ(r.content, "{\"answer\": 42}");
}

TEST(ToolCallParser, DetectsTheFormatFromTheTemplate) {
  EXPECT_EQ(detect_tool_call_format("{{- '<tool_call>\\n' }}{{ tool_call | tojson }}"), ToolCallFormat::kHermes);
  EXPECT_EQ(detect_tool_call_format("{{ '[AVAILABLE_TOOLS] ' }}{{ '[TOOL_CALLS] ' }}"), ToolCallFormat::kMistral);
  EXPECT_EQ(detect_tool_call_format("<|start_header_id|>ipython<|end_header_id|>"), ToolCallFormat::kLlama3);
  EXPECT_EQ(detect_tool_call_format("<|start_header_id|>user<|end_header_id|>"), ToolCallFormat::kGeneric);
  EXPECT_EQ(detect_tool_call_format("<|im_start|>"), ToolCallFormat::kGeneric);
}

std::string real_template(const std::string& name) {
  std::ifstream in(std::string(LMRT_SOURCE_DIR) + "/tests/chat/templates/" + name, std::ios::binary);
  EXPECT_TRUE(in.good()) << name;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The real templates of tests/chat/templates, as their models' cards describe their tool calls.
TEST(ToolCallParser, DetectsTheFormatOfRealTemplates) {
  const std::pair<const char*, ToolCallFormat> cases[] = {
      {"Qwen-Qwen2.5-7B-Instruct.jinja", ToolCallFormat::kHermes},
      {"Qwen3-Coder.jinja", ToolCallFormat::kHermes},
      {"NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja", ToolCallFormat::kHermes},
      {"meta-llama-Llama-3.1-8B-Instruct.jinja", ToolCallFormat::kLlama3},
      {"meta-llama-Llama-3.2-3B-Instruct.jinja", ToolCallFormat::kLlama3},
      {"meta-llama-Llama-3.3-70B-Instruct.jinja", ToolCallFormat::kLlama3},
      {"mistralai-Mistral-Nemo-Instruct-2407.jinja", ToolCallFormat::kMistral},
      {"mistral-v3.jinja", ToolCallFormat::kMistral},
      {"Mistral-Small-3.2-24B-Instruct-2506.jinja", ToolCallFormat::kMistral},
      {"google-gemma-2-2b-it.jinja", ToolCallFormat::kGeneric},
      {"meta-llama-Llama-2-7b-chat-hf.jinja", ToolCallFormat::kGeneric},
  };
  for (const auto& [name, format] : cases)
    EXPECT_STREQ(tool_call_format_name(detect_tool_call_format(real_template(name))), tool_call_format_name(format))
        << name;
}

// While streaming, text is held back from where a call may begin, and only from there.
TEST(ToolCallParser, SettledContentStopsBeforeAPossibleCall) {
  EXPECT_EQ(settled_content_length(ToolCallFormat::kHermes, "Hello"), 5u);
  EXPECT_EQ(settled_content_length(ToolCallFormat::kHermes, "Hello <tool"), 6u);
  EXPECT_EQ(settled_content_length(ToolCallFormat::kHermes, "Hello <tools are"), 16u);
  EXPECT_EQ(settled_content_length(ToolCallFormat::kHermes, "Hi <tool_call>{\"na"), 3u);
  EXPECT_EQ(settled_content_length(ToolCallFormat::kLlama3, " {\"name\""), 0u);
  EXPECT_EQ(settled_content_length(ToolCallFormat::kLlama3, "Sure"), 4u);
  EXPECT_EQ(settled_content_length(ToolCallFormat::kMistral, "[TOOL_CA"), 0u);
  EXPECT_EQ(settled_content_length(ToolCallFormat::kGeneric, "{"), 0u);
  EXPECT_EQ(settled_content_length(ToolCallFormat::kGeneric, "Sure {"), 6u);
}

TEST(ToolCallGrammar, RenamesRulesButNotLiteralsClassesOrCounts) {
  EXPECT_EQ(
      rename_gbnf_rules("root ::= \"root\" item{0,3} [a-z-] # root\nitem ::= [0-9]{1,2} root\n", "t0-", "t0-args"),
      "t0-args ::= \"root\" t0-item{0,3} [a-z-] # root\nt0-item ::= [0-9]{1,2} t0-args\n");
}

// Generates greedily under the grammar with a real model (whatever it would say, the grammar
// decides the shape) and reads the text back.
std::string generate_with_grammar(const std::string& grammar) {
  const char* env = std::getenv("LMRT_SHARED_DIR");
  const std::string path = std::string(env != nullptr ? env : LMRT_DEFAULT_SHARED_DIR) + "/models/stories260K.gguf";
  lmrt_model* model = nullptr;
  lmrt_context* ctx = nullptr;
  char err[512] = "";
  EXPECT_EQ(lmrt_model_open(path.c_str(), nullptr, &model, err, sizeof err), LMRT_OK) << err;
  lmrt_context_params cp;
  lmrt_context_params_init(&cp);
  cp.n_threads = 1;  // a 260K-parameter model: more threads only wait for each other
  EXPECT_EQ(lmrt_context_create(model, &cp, &ctx, err, sizeof err), LMRT_OK) << err;
  lmrt_generate_request req;
  lmrt_generate_request_init(&req);
  req.prompt = "Once upon a time";
  req.prompt_len = static_cast<size_t>(-1);
  req.max_tokens = 200;
  req.grammar = grammar.c_str();
  lmrt_generate_result res;
  res.struct_size = sizeof res;
  std::string text;
  if (lmrt_generate(ctx, &req, nullptr, nullptr, &res) == LMRT_OK)
    text.assign(res.text, res.text_len);
  else
    ADD_FAILURE() << lmrt_context_last_error(ctx);
  lmrt_context_free(ctx);
  lmrt_model_close(model);
  return text;
}

const json kTools = json::parse(R"([
  {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
    "properties": {"city": {"type": "string", "maxLength": 12}, "unit": {"enum": ["c", "f"]}},
    "required": ["city", "unit"], "additionalProperties": false}}},
  {"type": "function", "function": {"name": "count", "parameters": {"type": "object",
    "properties": {"n": {"type": "integer", "minimum": 1, "maximum": 9}}, "required": ["n"]}}}])");

TEST(ToolCallGrammar, EveryFormatYieldsACallItsParserReads) {
  for (ToolCallFormat f :
       {ToolCallFormat::kHermes, ToolCallFormat::kLlama3, ToolCallFormat::kMistral, ToolCallFormat::kGeneric}) {
    std::string error;
    const auto grammar = tool_call_grammar(f, kTools, &error);
    ASSERT_TRUE(grammar.has_value()) << error;
    const std::string text = generate_with_grammar(*grammar);
    const AssistantReply r = parse_assistant_reply(f, text);
    ASSERT_EQ(r.tool_calls.size(), 1u) << tool_call_format_name(f) << ": " << text;
    const json args = json::parse(r.tool_calls[0].arguments);
    if (r.tool_calls[0].name == "get_weather") {
      EXPECT_TRUE(args["city"].is_string() && args["city"].get<std::string>().size() <= 12) << args;
      EXPECT_TRUE(args["unit"] == "c" || args["unit"] == "f") << args;
      EXPECT_EQ(args.size(), 2u);
    } else {
      ASSERT_EQ(r.tool_calls[0].name, "count");
      EXPECT_TRUE(args["n"].is_number_integer() && args["n"] >= 1 && args["n"] <= 9) << args;
    }
  }
}

TEST(ToolCallGrammar, AnUnsupportedSchemaNamesTheTool) {
  std::string error;
  const json tools =
      json::parse(R"([{"type":"function","function":{"name":"f","parameters":{"type":"string","pattern":"^a+$"}}}])");
  EXPECT_FALSE(tool_call_grammar(ToolCallFormat::kHermes, tools, &error).has_value());
  EXPECT_NE(error.find("tools[0] (f)"), std::string::npos) << error;
  EXPECT_NE(error.find("pattern"), std::string::npos) << error;
}

// --- the reply read as it streams (ToolCallStream) ---

struct Streamed {
  std::string content;
  std::vector<ToolCall> calls;
  size_t argument_deltas_before_end = 0;  // argument fragments sent while the reply still streamed
  size_t names_before_end = 0;
};

void take(const std::vector<ToolCallStream::Delta>& deltas, Streamed* s, bool streaming) {
  for (const auto& d : deltas) {
    if (d.call < 0) {
      s->content += d.text;
      continue;
    }
    ASSERT_LE(static_cast<size_t>(d.call), s->calls.size());
    if (static_cast<size_t>(d.call) == s->calls.size()) {
      ASSERT_FALSE(d.name.empty()) << "a call's first delta names it";
      s->calls.push_back(ToolCall{d.name, ""});
      s->names_before_end += streaming ? 1 : 0;
      continue;
    }
    EXPECT_TRUE(d.name.empty());
    s->calls[static_cast<size_t>(d.call)].arguments += d.text;
    s->argument_deltas_before_end += streaming ? 1 : 0;
  }
}

// Feeds `text` in pieces of 1..5 bytes (as tokens come) and collects what the client would see.
Streamed stream_reply(ToolCallFormat f, const std::string& text, bool parallel = true) {
  ToolCallStream stream(f, parallel);
  Streamed s;
  std::vector<ToolCallStream::Delta> deltas;
  size_t i = 0, n = 1;
  while (i < text.size()) {
    const size_t len = std::min(n, text.size() - i);
    deltas.clear();
    stream.push(std::string_view(text).substr(i, len), &deltas);
    take(deltas, &s, true);
    i += len;
    n = n % 5 + 1;
  }
  deltas.clear();
  stream.finish(&deltas);
  take(deltas, &s, false);
  EXPECT_EQ(stream.calls_sent(), s.calls.size());
  return s;
}

// The streamed content and calls are exactly the complete reply's (same bytes of arguments), and
// the calls were streamed, not sent at the end: a name and several argument fragments each.
void expect_streams_like_complete(ToolCallFormat f, const std::string& text, size_t n_calls) {
  const AssistantReply whole = parse_assistant_reply(f, text);
  ASSERT_EQ(whole.tool_calls.size(), n_calls) << text;
  const Streamed s = stream_reply(f, text);
  EXPECT_EQ(s.content, whole.content) << text;
  ASSERT_EQ(s.calls.size(), n_calls) << text;
  for (size_t k = 0; k < n_calls; ++k) {
    EXPECT_EQ(s.calls[k].name, whole.tool_calls[k].name);
    EXPECT_EQ(s.calls[k].arguments, whole.tool_calls[k].arguments);
    EXPECT_TRUE(json::accept(s.calls[k].arguments)) << s.calls[k].arguments;
  }
  EXPECT_EQ(s.names_before_end, n_calls) << text;
  EXPECT_GE(s.argument_deltas_before_end, 2 * n_calls) << text;
}

TEST(ToolCallStream, EveryFormatStreamsNamesThenArgumentFragments) {
  expect_streams_like_complete(
      ToolCallFormat::kHermes,
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Berlin\", \"unit\": \"c\"}}\n</tool_call>",
      2);
  expect_streams_like_complete(ToolCallFormat::kLlama3,
                               "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"San Francisco, CA\"}}", 1);
  expect_streams_like_complete(ToolCallFormat::kLlama3,
                               "<|python_tag|>{\"name\": \"a\", \"parameters\": {\"q\": \"x y\"}}; {\"name\": \"b\", "
                               "\"parameters\": {\"n\": 1.50, \"s\": \"\\\"quoted\\\" \\u00e9\"}}",
                               2);
  expect_streams_like_complete(
      ToolCallFormat::kMistral,
      "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}, \"id\": \"abc123def\"}, "
      "{\"name\": \"get_time\", \"arguments\": {\"tz\": \"CET\"}}]",
      2);
  expect_streams_like_complete(ToolCallFormat::kGeneric,
                               "{\"name\": \"h\", \"arguments\": {\"k\": null, \"list\": [1, 2, {\"a\": \"}\"}]}}", 1);
}

// Arguments keep the model's own text (numbers, escapes), only the blanks between tokens go.
TEST(ToolCallStream, ArgumentsAreTheModelsTextMinified) {
  EXPECT_EQ(minify_json("{ \"a\" : [1.50, 2e3 ],\n \"b\": \"x  \\\" y\" }"), "{\"a\":[1.50,2e3],\"b\":\"x  \\\" y\"}");
  const AssistantReply r = parse_assistant_reply(
      ToolCallFormat::kHermes,
      "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"t\": 21.0, \"s\": \"\\u00e9\"}}\n</tool_call>");
  ASSERT_EQ(r.tool_calls.size(), 1u);
  EXPECT_EQ(r.tool_calls[0].arguments, "{\"t\":21.0,\"s\":\"\\u00e9\"}");
}

// Shapes the stream does not follow as it goes are settled at the end: fenced or wrapped calls
// arrive whole, and text that is not a call is content.
TEST(ToolCallStream, WhatIsNotACallIsContentAndOtherShapesArriveAtTheEnd) {
  for (const std::string& text :
       {std::string("{\"answer\": 42}"), std::string("Use <tool_call> tags to call tools."),
        std::string("<tool_call>{\"arguments\": {}}</tool_call>"), std::string("The answer is {\"name\": \"x\"}.")}) {
    for (ToolCallFormat f : {ToolCallFormat::kHermes, ToolCallFormat::kGeneric, ToolCallFormat::kLlama3}) {
      const Streamed s = stream_reply(f, text);
      const AssistantReply whole = parse_assistant_reply(f, text);
      if (!whole.tool_calls.empty()) continue;
      EXPECT_TRUE(s.calls.empty()) << tool_call_format_name(f) << ": " << text;
      EXPECT_EQ(s.content, text) << tool_call_format_name(f);
    }
  }
  const std::string fenced = "```json\n{\"tool_call\": {\"name\": \"g\", \"arguments\": {\"x\": 1}}}\n```\n";
  const Streamed s = stream_reply(ToolCallFormat::kGeneric, fenced);
  ASSERT_EQ(s.calls.size(), 1u);
  EXPECT_EQ(s.calls[0].name, "g");
  EXPECT_EQ(s.calls[0].arguments, "{\"x\":1}");
  EXPECT_EQ(s.content, "");
  // Arguments written as a JSON string: the call is sent whole at the end, decoded.
  const Streamed q =
      stream_reply(ToolCallFormat::kHermes, "<tool_call>\n{\"name\": \"f\", \"arguments\": \"{\\\"x\\\": [1, 2]}\"}");
  ASSERT_EQ(q.calls.size(), 1u);
  EXPECT_EQ(json::parse(q.calls[0].arguments), json({{"x", {1, 2}}}));
}

// parallel_tool_calls false: one call, in the stream and in the complete reply.
TEST(ToolCallStream, ParallelFalseKeepsTheFirstCall) {
  const std::string text =
      "<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": 1}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\", "
      "\"arguments\": {}}\n</tool_call>";
  EXPECT_EQ(parse_assistant_reply(ToolCallFormat::kHermes, text).tool_calls.size(), 2u);
  const AssistantReply one = parse_assistant_reply(ToolCallFormat::kHermes, text, false);
  ASSERT_EQ(one.tool_calls.size(), 1u);
  EXPECT_EQ(one.tool_calls[0].name, "a");
  const Streamed s = stream_reply(ToolCallFormat::kHermes, text, false);
  ASSERT_EQ(s.calls.size(), 1u);
  EXPECT_EQ(s.calls[0].name, "a");
  EXPECT_EQ(s.calls[0].arguments, "{\"x\":1}");
  const Streamed m =
      stream_reply(ToolCallFormat::kMistral,
                   "[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {}}, {\"name\": \"b\", \"arguments\": {}}]", false);
  EXPECT_EQ(m.calls.size(), 1u);
}

// The grammar-forced call of each format, generated by a real model, streams to the same call.
TEST(ToolCallStream, GrammarForcedCallsOfARealModelStreamIdentically) {
  for (ToolCallFormat f :
       {ToolCallFormat::kHermes, ToolCallFormat::kLlama3, ToolCallFormat::kMistral, ToolCallFormat::kGeneric}) {
    std::string error;
    const auto grammar = tool_call_grammar(f, kTools, &error);
    ASSERT_TRUE(grammar.has_value()) << error;
    expect_streams_like_complete(f, generate_with_grammar(*grammar), 1);
  }
}

}  // namespace
}  // namespace server
