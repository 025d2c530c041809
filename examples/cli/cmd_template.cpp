// lmrt template: a chat rendered with the model's (or a given) chat template, printed exactly.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli_common.h"

namespace {

bool read_file(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

}  // namespace

int cmd_template(int argc, char** argv) {
  cli::Args args;
  std::string error;
  if (!cli::parse_args(argc, argv, 2,
                       {{"model", "m", true},
                        {"messages", "", true},
                        {"tools", "", true},
                        {"template", "", true},
                        {"template-name", "", true},
                        {"vars", "", true},
                        {"bos", "", true},
                        {"eos", "", true},
                        {"no-generation-prompt", "", false}},
                       &args, &error)) {
    cli::print_error("template", error);
    return 2;
  }
  if (!args.has("messages")) {
    cli::print_error("template", "give the chat with --messages FILE.json (a JSON array of messages)");
    return 2;
  }
  std::string messages, tools, tmpl, vars;
  const std::vector<std::pair<const char*, std::string*>> files = {
      {"messages", &messages}, {"tools", &tools}, {"template", &tmpl}, {"vars", &vars}};
  for (const auto& [name, dst] : files) {
    if (args.has(name) && !read_file(args.get(name), dst)) {
      cli::print_error("template", "cannot read --" + std::string(name) + " file " + args.get(name));
      return 1;
    }
  }
  lmrt_model* model = nullptr;
  if (!args.has("template") || args.has("model")) {
    model = cli::open_model(cli::model_path(args));
    if (model == nullptr) return 1;
  }
  lmrt_chat_template_params p;
  lmrt_chat_template_params_init(&p);
  p.add_generation_prompt = args.has("no-generation-prompt") ? 0 : 1;
  const std::string name = args.get("template-name"), bos = args.get("bos"), eos = args.get("eos");
  if (args.has("template")) p.template_text = tmpl.c_str();
  if (args.has("template-name")) p.template_name = name.c_str();
  if (args.has("tools")) p.tools_json = tools.c_str();
  if (args.has("vars")) p.extra_json = vars.c_str();
  if (args.has("bos")) p.bos_token = bos.c_str();
  if (args.has("eos")) p.eos_token = eos.c_str();
  char err[1024];
  size_t len = 0;
  lmrt_status s = lmrt_chat_apply_template(model, messages.c_str(), &p, nullptr, 0, &len, err, sizeof err);
  std::string text(len + 1, '\0');
  if (s == LMRT_ERR_BUFFER_TOO_SMALL)
    s = lmrt_chat_apply_template(model, messages.c_str(), &p, text.data(), text.size(), &len, err, sizeof err);
  lmrt_model_close(model);
  if (s != LMRT_OK) {
    cli::print_error("template", std::string(lmrt_status_str(s)) + ": " + err);
    return 1;
  }
  std::fwrite(text.data(), 1, len, stdout);
  return 0;
}
