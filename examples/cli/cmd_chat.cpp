// lmrt chat: an interactive chat in the terminal (or over piped lines). Each line is a message; a
// line holding only """ starts a message of several lines, ended by another such line. Lines that
// start with / are commands (/help lists them). The reply streams to stdout; Ctrl-C cancels it and
// keeps the session; end of input (Ctrl-D) quits.
#include <signal.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "chat_session.h"
#include "cli_common.h"
#include "sampling_options.h"

namespace {

volatile std::sig_atomic_t g_interrupted = 0;

void on_sigint(int) { g_interrupted = 1; }

// Ctrl-C cancels the reply being generated (through the token callback's return value), not the
// program; the previous handler comes back afterwards.
class InterruptDuringReply {
 public:
  InterruptDuringReply() {
    g_interrupted = 0;
    struct sigaction sa {};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &previous_);
  }
  ~InterruptDuringReply() { sigaction(SIGINT, &previous_, nullptr); }

 private:
  struct sigaction previous_ {};
};

int stream_piece(void*, const lmrt_token_event* ev) {
  std::fwrite(ev->text, 1, ev->text_len, stdout);
  std::fflush(stdout);
  return g_interrupted ? 1 : 0;
}

const char* const kHelp =
    "Type a message and press Enter; a line with only \"\"\" starts a message of several lines, ended by\n"
    "another such line. Commands:\n"
    "  /system TEXT   set the system prompt (/system alone removes it)\n"
    "  /reset         forget the conversation (the system prompt stays)\n"
    "  /save FILE     write the messages as OpenAI JSON (an existing file: /save! FILE)\n"
    "  /load FILE     continue a saved conversation\n"
    "  /stats         tokens of the last turn (how many came from the earlier turns' KV), context use\n"
    "  /help          this text\n"
    "  /quit          leave (so does end of input, Ctrl-D); Ctrl-C stops a reply\n";

struct Totals {
  unsigned turns = 0;
  uint64_t prompt_tokens = 0, reused_tokens = 0, completion_tokens = 0;
};

void print_stats(const cli::ChatSession& chat, const cli::ChatTurnStats& last, const Totals& totals, uint32_t n_ctx) {
  std::printf("messages %zu, turns %u\n", chat.messages().size(), totals.turns);
  if (totals.turns > 0) {
    std::printf(
        "last turn: %u prompt tokens (%u reused), %u generated, finish %s, prefill %.1f tok/s, decode %.1f tok/s\n",
        last.prompt_tokens, last.reused_tokens, last.completion_tokens, lmrt_finish_reason_str(last.finish),
        last.prefill_tokens_per_s, last.decode_tokens_per_s);
    std::printf("all turns: %llu prompt tokens (%llu reused), %llu generated\n",
                static_cast<unsigned long long>(totals.prompt_tokens),
                static_cast<unsigned long long>(totals.reused_tokens),
                static_cast<unsigned long long>(totals.completion_tokens));
  }
  std::printf("context: %u of %u tokens\n", last.n_past, n_ctx);
}

// The text after a command word ("/save FILE" -> "FILE"), without surrounding spaces.
std::string argument_of(const std::string& line, size_t command_length) {
  std::string rest = line.substr(command_length);
  const size_t b = rest.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  const size_t e = rest.find_last_not_of(" \t\r");
  return rest.substr(b, e - b + 1);
}

bool starts_command(const std::string& line, const char* word) {
  const std::string w = word;
  return line.compare(0, w.size(), w) == 0 && (line.size() == w.size() || line[w.size()] == ' ');
}

}  // namespace

int cmd_chat(int argc, char** argv) {
  cli::Args args;
  std::string error;
  std::vector<cli::OptionSpec> spec = {
      {"model", "m", true},   {"system", "", true},    {"n-predict", "n", true},
      {"threads", "t", true}, {"ctx-size", "c", true}, {"template", "", true},
      {"chatml", "", false},  {"verbose", "", false},  {"kv-f32", "", false},
  };
  spec.insert(spec.end(), cli::kSamplingOptions.begin(), cli::kSamplingOptions.end());
  if (!cli::parse_args(argc, argv, 2, spec, &args, &error)) {
    cli::print_error("chat", error);
    return 2;
  }
  cli::GenerationSizes sizes{512};
  if (!cli::parse_generation_sizes("chat", args, &sizes)) return 2;
  if (args.has("template") && args.has("chatml")) {
    cli::print_error("chat", "give --template FILE or --chatml, not both");
    return 2;
  }
  std::string template_text;
  if (args.has("template") && !cli::read_text_file(args.get("template"), &template_text)) {
    cli::print_error("chat", "cannot read the template file '" + args.get("template") + "'");
    return 2;
  }
  if (args.has("chatml")) template_text = cli::kChatmlTemplate;

  lmrt_model* model = cli::open_model(cli::model_path(args));
  if (model == nullptr) return 1;
  size_t len = 0;
  if (template_text.empty() &&
      lmrt_model_meta_str(model, "tokenizer.chat_template", nullptr, 0, &len) == LMRT_ERR_INVALID_ARGUMENT) {
    cli::print_error("chat",
                     "the model has no chat template (GGUF key tokenizer.chat_template); give one with "
                     "--template FILE, or --chatml for ChatML");
    lmrt_model_close(model);
    return 2;
  }

  lmrt_generate_request req;
  lmrt_generate_request_init(&req);
  req.max_tokens = static_cast<int32_t>(sizes.n_predict);
  std::vector<lmrt_logit_bias> biases;
  std::vector<std::string> stop_strings;
  std::string samplers;
  if (!cli::apply_sampling_options("chat", args, &req, &biases, &stop_strings, &samplers)) {
    lmrt_model_close(model);
    return 2;
  }
  std::vector<const char*> stops;
  for (const std::string& st : stop_strings) stops.push_back(st.c_str());
  req.stop = stops.data();
  req.n_stop = stops.size();

  lmrt_context* ctx = cli::create_context(model, sizes, args.has("kv-f32"));
  if (ctx == nullptr) {
    lmrt_model_close(model);
    return 1;
  }
  lmrt_context_params actual;
  actual.struct_size = sizeof actual;
  lmrt_context_get_params(ctx, &actual);

  cli::ChatSession chat(model, ctx, template_text);
  if (args.has("system")) chat.set_system(args.get("system"));
  const bool interactive = isatty(STDIN_FILENO) != 0;
  const bool verbose = args.has("verbose");
  if (interactive) std::printf("lmrt chat: /help lists the commands, Ctrl-D quits.\n");
  cli::ChatTurnStats last;
  Totals totals;
  int rc = 0;
  std::string line;
  for (;;) {
    if (interactive) {
      std::printf("> ");
      std::fflush(stdout);
    }
    if (!std::getline(std::cin, line)) break;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::string message;
    if (line == "\"\"\"") {  // a message of several lines
      bool closed = false;
      while (std::getline(std::cin, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line == "\"\"\"") {
          closed = true;
          break;
        }
        message += (message.empty() ? "" : "\n") + line;
      }
      if (!closed) break;  // end of input inside the message: quit without sending it
    } else if (!line.empty() && line[0] == '/') {
      std::string what;
      if (line == "/quit" || line == "/exit") break;
      if (line == "/help") {
        std::fputs(kHelp, stdout);
      } else if (line == "/reset") {
        chat.reset();
        std::printf("conversation cleared\n");
      } else if (line == "/stats") {
        print_stats(chat, last, totals, actual.n_ctx);
      } else if (starts_command(line, "/system")) {
        chat.set_system(argument_of(line, 7));
        std::printf("system prompt %s\n", argument_of(line, 7).empty() ? "removed" : "set");
      } else if (starts_command(line, "/save") || starts_command(line, "/save!")) {
        const bool overwrite = line.compare(0, 6, "/save!") == 0;
        const std::string path = argument_of(line, overwrite ? 6 : 5);
        if (path.empty())
          what = "/save needs a file name";
        else if (chat.save(path, overwrite, &what))
          std::printf("saved %zu messages to %s\n", chat.messages().size(), path.c_str());
      } else if (starts_command(line, "/load")) {
        const std::string path = argument_of(line, 5);
        if (path.empty())
          what = "/load needs a file name";
        else if (chat.load(path, &what))
          std::printf("loaded %zu messages from %s\n", chat.messages().size(), path.c_str());
      } else {
        what = "unknown command '" + line + "' (/help lists the commands)";
      }
      if (!what.empty()) cli::print_error("chat", what);
      std::fflush(stdout);
      continue;
    } else {
      message = line;
    }
    if (message.empty()) continue;

    cli::ChatTurnStats turn;
    bool ok;
    {
      InterruptDuringReply interrupt;
      ok = chat.reply(message, req, stream_piece, nullptr, &turn, &error);
    }
    if (!ok) {
      std::printf("\n");
      cli::print_error("chat", error + " (the message was not added)");
      rc = 1;
      continue;
    }
    std::printf(turn.finish == LMRT_FINISH_CANCELLED ? " [cancelled]\n" : "\n");
    std::fflush(stdout);
    last = turn;
    ++totals.turns;
    totals.prompt_tokens += turn.prompt_tokens;
    totals.reused_tokens += turn.reused_tokens;
    totals.completion_tokens += turn.completion_tokens;
    if (verbose)
      std::fprintf(stderr, "[%s: %u prompt tokens (%u reused) + %u generated, prefill %.1f tok/s, decode %.1f tok/s]\n",
                   lmrt_finish_reason_str(turn.finish), turn.prompt_tokens, turn.reused_tokens, turn.completion_tokens,
                   turn.prefill_tokens_per_s, turn.decode_tokens_per_s);
  }
  if (interactive) std::printf("\n");
  lmrt_context_free(ctx);
  lmrt_model_close(model);
  return rc;
}
