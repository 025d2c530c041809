// The server's tool-call reading (examples/server/tool_calls.cpp) on literal replies in each
// format as the models write them, and the grammar that forces a call (tool_call_grammar.cpp),
// checked by generating from it with the library's grammar sampler.
#include "tool_calls.h"

#include <gtest/gtest.h>
#include <lmrt/lmrt.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>

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

}  // namespace
}  // namespace server
