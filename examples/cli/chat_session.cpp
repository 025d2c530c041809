// The conversation of `lmrt chat`: messages, prompt ids per turn, generation, save and load.
#include "chat_session.h"

#include <sys/stat.h>

#include <cstdint>
#include <vector>

#include "runtime/util/bounded_json.h"
#include "runtime/util/file_replacer.h"
#include "runtime/util/regular_file.h"
#include "sampling_options.h"

namespace cli {

const char* const kChatmlTemplate =
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + "
    "'\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

ChatSession::ChatSession(lmrt_model* model, lmrt_context* ctx, std::string template_text)
    : model_(model), ctx_(ctx), template_text_(std::move(template_text)) {}

void ChatSession::set_system(const std::string& text) {
  const bool has = !messages_.empty() && messages_[0].value("role", "") == "system";
  if (text.empty()) {
    if (has) messages_.erase(0);
    return;
  }
  nlohmann::ordered_json m = {{"role", "system"}, {"content", text}};
  if (has)
    messages_[0] = std::move(m);
  else
    messages_.insert(messages_.begin(), std::move(m));
}

void ChatSession::reset() {
  nlohmann::ordered_json kept = nlohmann::ordered_json::array();
  if (!messages_.empty() && messages_[0].value("role", "") == "system") kept.push_back(messages_[0]);
  messages_ = std::move(kept);
}

bool ChatSession::tokenize(std::vector<int32_t>* ids, std::string* error) const {
  lmrt_chat_template_params p;
  lmrt_chat_template_params_init(&p);
  if (!template_text_.empty()) p.template_text = template_text_.c_str();
  const std::string json = messages_.dump();
  char err[1024] = {0};
  size_t n = 0;
  lmrt_status s = lmrt_chat_tokenize(model_, json.c_str(), &p, nullptr, 0, &n, err, sizeof err);
  if (s == LMRT_ERR_BUFFER_TOO_SMALL) {
    ids->resize(n);
    s = lmrt_chat_tokenize(model_, json.c_str(), &p, ids->data(), ids->size(), &n, err, sizeof err);
  }
  if (s != LMRT_OK) {
    *error = std::string(lmrt_status_str(s)) + ": " + err;
    return false;
  }
  ids->resize(n);
  return true;
}

bool ChatSession::reply(const std::string& user_text, const lmrt_generate_request& base, lmrt_token_callback on_token,
                        void* user, ChatTurnStats* stats, std::string* error) {
  messages_.push_back({{"role", "user"}, {"content", user_text}});
  std::vector<int32_t> ids;
  if (!tokenize(&ids, error)) {
    messages_.erase(messages_.size() - 1);
    return false;
  }
  lmrt_generate_request req = base;
  req.prompt = nullptr;
  req.prompt_len = 0;
  req.prompt_tokens = ids.data();
  req.n_prompt_tokens = ids.size();
  lmrt_generate_result res;
  res.struct_size = sizeof res;
  const lmrt_status s = lmrt_generate(ctx_, &req, on_token, user, &res);
  if (s != LMRT_OK) {
    *error = std::string(lmrt_status_str(s)) + ": " + lmrt_context_last_error(ctx_);
    messages_.erase(messages_.size() - 1);
    return false;
  }
  messages_.push_back({{"role", "assistant"}, {"content", std::string(res.text, res.text_len)}});
  *stats = ChatTurnStats{res.prompt_tokens, res.reused_tokens,        res.completion_tokens,  res.n_past,
                         res.finish_reason, res.prefill_tokens_per_s, res.decode_tokens_per_s};
  return true;
}

namespace {

// Larger is no conversation /save wrote (and a model is not read whole to find that out).
constexpr uint64_t kMaxTranscriptBytes = uint64_t{256} << 20;

// The messages of a file that /save wrote (or {"messages": [...]}): every one an object with a string "role".
// Only a regular file is read (a FIFO is refused rather than waited on), up to kMaxTranscriptBytes, parsed
// with the library's nesting limit (a deep tree overflowed the stack).
bool read_transcript(const std::string& path, nlohmann::ordered_json* messages, std::string* error) {
  std::string text;
  if (const lmrt::Status s =
          lmrt::read_regular_file(path, kMaxTranscriptBytes, "a saved conversation (256 MiB)", &text);
      !s.ok()) {
    *error = s.message();
    return false;
  }
  nlohmann::ordered_json j;
  if (const lmrt::Status s = lmrt::parse_bounded_json(text, "'" + path + "'", &j); !s.ok()) {
    *error = s.message();
    return false;
  }
  if (j.is_object() && j.contains("messages")) j = j["messages"];
  if (!j.is_array()) {
    *error = "'" + path + "' holds no messages array";
    return false;
  }
  for (const auto& m : j)
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) {
      *error = "'" + path + "': every message must be an object with a string \"role\"";
      return false;
    }
  *messages = std::move(j);
  return true;
}

}  // namespace

bool ChatSession::save(const std::string& path, bool overwrite, std::string* error) const {
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0) {  // anything there, a dangling link too
    if (!overwrite) {
      *error = "'" + path + "' exists; /save! " + path + " replaces it";
      return false;
    }
    // /save! replaces a saved conversation, never a model, a folder, a FIFO or another file of the user's.
    nlohmann::ordered_json old;
    std::string why;
    if (!read_transcript(path, &old, &why)) {
      *error = "'" + path + "' is not a saved conversation; /save! replaces only those";
      return false;
    }
  }
  const std::string text = messages_.dump(2) + "\n";
  const lmrt::Status s = lmrt::replace_file(path, text.data(), text.size());
  if (!s.ok()) *error = s.message();
  return s.ok();
}

bool ChatSession::load(const std::string& path, std::string* error) {
  nlohmann::ordered_json j;
  if (!read_transcript(path, &j, error)) return false;
  messages_ = std::move(j);
  return true;
}

}  // namespace cli
