// One conversation of `lmrt chat`: the messages (OpenAI's JSON), each turn rendered whole with the
// model's chat template into prompt ids (lmrt_chat_tokenize: only the template's markers are control
// tokens), and the reply generated in a context that still holds the earlier turns, so lmrt_generate
// reuses their KV up to the first id that differs (a reply the template lays out differently from the
// generated ids is recomputed from there on).
#pragma once

#include <lmrt/lmrt.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace cli {

struct ChatTurnStats {
  uint32_t prompt_tokens = 0;
  uint32_t reused_tokens = 0;  // prompt tokens whose KV came from the previous turns
  uint32_t completion_tokens = 0;
  uint32_t n_past = 0;  // tokens the context holds afterwards
  lmrt_finish_reason finish = LMRT_FINISH_NONE;
  double prefill_tokens_per_s = 0;
  double decode_tokens_per_s = 0;
};

class ChatSession {
 public:
  // template_text: a Jinja chat template, or empty for the model's own (tokenizer.chat_template).
  ChatSession(lmrt_model* model, lmrt_context* ctx, std::string template_text);

  // The system prompt, first in the conversation; "" removes it. Kept by reset().
  void set_system(const std::string& text);
  // Forgets every message but the system prompt.
  void reset();
  // Adds the user's message, generates the reply (on_token streams it) and adds it as the assistant's
  // message; a cancelled or cut-off reply is kept as far as it went. `base` gives the sampling fields.
  // On failure (the chat does not fit, the template refuses it) the user's message is taken back and
  // *error says why.
  bool reply(const std::string& user_text, const lmrt_generate_request& base, lmrt_token_callback on_token, void* user,
             ChatTurnStats* stats, std::string* error);

  // The messages as a JSON array (the format of `lmrt template --messages`), to a file: an existing
  // file only when overwrite is set.
  bool save(const std::string& path, bool overwrite, std::string* error) const;
  // Replaces the conversation with a file's messages: a JSON array of objects with a string "role"
  // (or an object whose "messages" is one).
  bool load(const std::string& path, std::string* error);

  const nlohmann::ordered_json& messages() const { return messages_; }

 private:
  bool tokenize(std::vector<int32_t>* ids, std::string* error) const;

  lmrt_model* model_;
  lmrt_context* ctx_;
  std::string template_text_;
  nlohmann::ordered_json messages_ = nlohmann::ordered_json::array();
};

// ChatML, for a model without a template (`lmrt chat --chatml`).
extern const char* const kChatmlTemplate;

}  // namespace cli
