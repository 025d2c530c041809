// Unit tests of the server's pieces that need no network: chat templates, the GGUF metadata
// reader and request validation.
#include <gtest/gtest.h>
#include <lmrt/lmrt.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

#include "api_request.h"
#include "chat_template.h"
#include "gguf_metadata.h"

namespace server {
namespace {

std::string shared_model(const char* name) {
  const char* env = std::getenv("LMRT_SHARED_DIR");
  return std::string(env != nullptr ? env : LMRT_DEFAULT_SHARED_DIR) + "/models/" + name;
}

const std::vector<ChatMessage> kConversation = {
    {"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello."}, {"user", "Bye"}};

TEST(ServerChatTemplate, ChatMLWritesEveryTurnAndOpensTheAssistant) {
  EXPECT_EQ(render_chat(ChatTemplate::kChatML, kConversation),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\nHello.<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ServerChatTemplate, Llama2PutsTheSystemPromptInTheFirstInstBlock) {
  EXPECT_EQ(render_chat(ChatTemplate::kLlama2, kConversation),
            "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST] Hello. </s><s>[INST] Bye [/INST]");
}

TEST(ServerChatTemplate, ZephyrEndsTurnsWithEos) {
  EXPECT_EQ(
      render_chat(ChatTemplate::kZephyr, kConversation),
      "<|system|>\nBe brief.</s>\n<|user|>\nHi</s>\n<|assistant|>\nHello.</s>\n<|user|>\nBye</s>\n<|assistant|>\n");
}

TEST(ServerChatTemplate, PlainIsReadableText) {
  EXPECT_EQ(render_chat(ChatTemplate::kPlain, kConversation),
            "System: Be brief.\nUser: Hi\nAssistant: Hello.\nUser: Bye\nAssistant:");
  EXPECT_FALSE(chat_template_uses_special_tokens(ChatTemplate::kPlain));
}

TEST(ServerChatTemplate, DetectsFamiliesFromJinjaMarkers) {
  EXPECT_EQ(detect_chat_template("{% for m in messages %}{{'<|im_start|>' + m['role']}}{% endfor %}"),
            ChatTemplate::kChatML);
  EXPECT_EQ(detect_chat_template("{{ bos_token + '[INST] ' + content + ' [/INST]' }}"), ChatTemplate::kLlama2);
  EXPECT_EQ(detect_chat_template("{{ '<|user|>\n' + c + eos_token }}{{ '<|assistant|>' }}"), ChatTemplate::kZephyr);
  EXPECT_EQ(detect_chat_template("{{ messages }}"), ChatTemplate::kPlain);
}

// Writes a GGUF v3 header with a u32, a string array and the chat template, in that order, so the
// reader has to skip values of several types to reach it.
std::string write_gguf(const std::string& tmpl) {
  const std::string path = testing::TempDir() + "/server_meta_test.gguf";
  std::ofstream out(path, std::ios::binary);
  auto u32 = [&](uint32_t v) { out.write(reinterpret_cast<const char*>(&v), 4); };
  auto u64 = [&](uint64_t v) { out.write(reinterpret_cast<const char*>(&v), 8); };
  auto str = [&](const std::string& s) {
    u64(s.size());
    out.write(s.data(), static_cast<std::streamsize>(s.size()));
  };
  out.write("GGUF", 4);
  u32(3);
  u64(0);  // tensors
  u64(3);  // keys
  str("llama.context_length");
  u32(4);
  u32(512);
  str("tokenizer.ggml.tokens");
  u32(9);
  u32(8);
  u64(2);
  str("<s>");
  str("</s>");
  str("tokenizer.chat_template");
  u32(8);
  str(tmpl);
  return path;
}

TEST(ServerGgufMetadata, FindsTheChatTemplateAfterOtherValues) {
  const std::string path = write_gguf("<|im_start|>{{x}}");
  EXPECT_EQ(read_gguf_string(path, "tokenizer.chat_template").value_or("?"), "<|im_start|>{{x}}");
  EXPECT_FALSE(read_gguf_string(path, "llama.context_length").has_value());  // not a string
  EXPECT_FALSE(read_gguf_string(path, "missing").has_value());
  std::remove(path.c_str());
}

TEST(ServerGgufMetadata, ReadsTheRealModelAndRejectsOtherFiles) {
  const std::string model = shared_model("TinyStories-656K-Q8_0.gguf");
  EXPECT_EQ(read_gguf_string(model, "general.architecture").value_or("?"), "llama");
  EXPECT_FALSE(read_gguf_string(model, "tokenizer.chat_template").has_value());
  EXPECT_FALSE(read_gguf_string(shared_model("stories260K.bin"), "general.architecture").has_value());
  EXPECT_FALSE(read_gguf_string("/nonexistent/file.gguf", "general.architecture").has_value());
}

TEST(ServerApiRequest, ValidatesFieldsAndAddsTemplateStops) {
  const ModelFacts facts{nullptr, 512, 256, ChatTemplate::kChatML};
  ApiRequest r;
  ASSERT_FALSE(parse_api_request(R"({"messages":[{"role":"user","content":"Hi"}],"stop":"x","seed":3,"n":2})",
                                 Endpoint::kChat, facts, &r));
  EXPECT_EQ(r.prompts.at(0), "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_TRUE(r.parse_special);
  EXPECT_EQ(r.n, 2);
  EXPECT_EQ(r.sampling.max_tokens, 256);
  EXPECT_EQ(r.sampling.stop, (std::vector<std::string>{"<|im_end|>", "<|im_start|>", "x"}));
  EXPECT_EQ(r.sampling.seed.value_or(0), 3u);

  ApiRequest bad;
  auto err = parse_api_request(R"({"prompt":"x","top_p":"high"})", Endpoint::kCompletions, facts, &bad);
  ASSERT_TRUE(err.has_value());
  EXPECT_EQ(err->status, 400);
  EXPECT_EQ(err->param, "top_p");
  err = parse_api_request(R"({"prompt":"x","logit_bias":{"512":1}})", Endpoint::kCompletions, facts, &bad);
  ASSERT_TRUE(err.has_value());
  EXPECT_EQ(err->param, "logit_bias");
  EXPECT_TRUE(parse_api_request("\xff", Endpoint::kCompletions, facts, &bad).has_value());
}

}  // namespace
}  // namespace server
