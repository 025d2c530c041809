// Chat templates: the model's (or a caller's) Jinja template rendered over OpenAI-style messages.
#include <algorithm>
#include <cstring>
#include <optional>

#include "abi/api_support.h"
#include "abi/handles.h"
#include "lmrt/lmrt.h"
#include "runtime/chat/chat_template.h"
#include "runtime/chat/chat_tokens.h"

using lmrt::Code;
using lmrt::Status;
using namespace lmrt::abi;

namespace {

// The text of a special token as transformers passes it (the vocabulary's token text).
std::optional<std::string> token_text(const lmrt_model* model, int32_t id) {
  const lmrt::Vocab& v = model->tokenizer->vocab();
  if (id < 0 || id >= v.size()) return std::nullopt;
  return std::string(v.tokens[static_cast<size_t>(id)]);
}

// The render request for a model and params (NULL for defaults). The strings it views live in
// *params or in the model.
Status make_request(const lmrt_model* model, const char* messages_json, const lmrt_chat_template_params* params,
                    lmrt::ChatTemplateRequest* out) {
  lmrt::ChatTemplateRequest& r = *out;
  lmrt_chat_template_params p;
  lmrt_chat_template_params_init(&p);
  LMRT_RETURN_IF_ERROR(read_params(params, &p));
  r.messages_json = messages_json;
  if (p.tools_json != nullptr) r.tools_json = p.tools_json;
  if (p.extra_json != nullptr) r.extra_json = p.extra_json;
  r.add_generation_prompt = p.add_generation_prompt != 0;
  if (p.template_text != nullptr) {
    r.template_text = p.template_text;
  } else {
    if (model == nullptr) return lmrt::Error(Code::invalid_argument, "give a model or params->template_text");
    std::string key = "tokenizer.chat_template";
    if (p.template_name != nullptr && p.template_name[0] != '\0') key += std::string(".") + p.template_name;
    const auto text = model->llama->gguf().get_string(key);
    if (!text) return lmrt::Error(Code::invalid_argument, "the model has no chat template (GGUF key " + key + ")");
    r.template_text = *text;
  }
  if (p.bos_token != nullptr)
    r.bos_token = p.bos_token;
  else if (model != nullptr)
    r.bos_token = token_text(model, model->tokenizer->vocab().bos_id);
  if (p.eos_token != nullptr)
    r.eos_token = p.eos_token;
  else if (model != nullptr)
    r.eos_token = token_text(model, model->tokenizer->vocab().eos_id);
  return Status::Ok();
}

}  // namespace

extern "C" {

lmrt_status lmrt_chat_template_params_init_sized(lmrt_chat_template_params* params, size_t struct_size) {
  lmrt_chat_template_params d{};
  d.struct_size = sizeof d;
  d.add_generation_prompt = 1;
  return init_sized(params, struct_size, d);
}

lmrt_status lmrt_chat_apply_template(const lmrt_model* model, const char* messages_json,
                                     const lmrt_chat_template_params* params, char* buf, size_t capacity, size_t* len,
                                     char* err, size_t err_size) {
  auto report = [&](const std::string& m) { copy_message(m, err, err_size); };
  return guarded(
      [&]() -> Status {
        if (messages_json == nullptr || len == nullptr || (buf == nullptr && capacity != 0))
          return lmrt::Error(Code::invalid_argument,
                             "messages_json and len must not be NULL (nor buf with a capacity)");
        lmrt::ChatTemplateRequest r;
        LMRT_RETURN_IF_ERROR(make_request(model, messages_json, params, &r));
        std::string text;
        LMRT_RETURN_IF_ERROR(lmrt::render_chat_template(r, &text));
        *len = text.size();
        if (text.size() + 1 > capacity)
          return lmrt::Error(Code::buffer_too_small,
                             "the rendered text needs " + std::to_string(text.size() + 1) + " bytes with its NUL");
        std::memcpy(buf, text.c_str(), text.size() + 1);
        return Status::Ok();
      },
      report);
}

lmrt_status lmrt_chat_tokenize(const lmrt_model* model, const char* messages_json,
                               const lmrt_chat_template_params* params, int32_t* tokens, size_t capacity,
                               size_t* n_tokens, char* err, size_t err_size) {
  auto report = [&](const std::string& m) { copy_message(m, err, err_size); };
  return guarded(
      [&]() -> Status {
        if (model == nullptr || messages_json == nullptr || n_tokens == nullptr || (tokens == nullptr && capacity != 0))
          return lmrt::Error(Code::invalid_argument,
                             "model, messages_json and n_tokens must not be NULL (nor tokens with a capacity)");
        lmrt::ChatTemplateRequest r;
        LMRT_RETURN_IF_ERROR(make_request(model, messages_json, params, &r));
        std::vector<int32_t> ids;
        LMRT_RETURN_IF_ERROR(lmrt::tokenize_chat(*model->tokenizer, r, &ids));
        *n_tokens = ids.size();
        if (ids.size() > capacity)
          return lmrt::Error(Code::buffer_too_small, "the chat needs " + std::to_string(ids.size()) + " tokens");
        std::copy(ids.begin(), ids.end(), tokens);
        return Status::Ok();
      },
      report);
}

}  // extern "C"
