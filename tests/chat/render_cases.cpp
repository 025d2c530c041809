// Renders a batch of chat-template cases through the C ABI, for tests/chat/compare_templates.py:
//   lmrt_render_cases CASES.json  ->  stdout: [{"status": "OK"|"RAISE"|"ERROR", "text": ...}, ...]
// Each case: {"template", "messages", "tools"?, "vars"?, "add_generation_prompt", "bos_token"?,
// "eos_token"?}. One process for every case keeps the comparison fast.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "lmrt/lmrt.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: lmrt_render_cases CASES.json\n");
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const nlohmann::ordered_json cases = nlohmann::ordered_json::parse(ss.str());
  nlohmann::ordered_json results = nlohmann::ordered_json::array();
  for (const auto& c : cases) {
    const std::string tmpl = c.at("template").get<std::string>();
    const std::string messages = c.at("messages").dump();
    const std::string tools = c.contains("tools") ? c["tools"].dump() : "";
    const std::string vars = c.contains("vars") ? c["vars"].dump() : "";
    const std::string bos = c.value("bos_token", ""), eos = c.value("eos_token", "");
    lmrt_chat_template_params p;
    lmrt_chat_template_params_init(&p);
    p.template_text = tmpl.c_str();
    p.add_generation_prompt = c.at("add_generation_prompt").get<bool>() ? 1 : 0;
    if (c.contains("tools")) p.tools_json = tools.c_str();
    if (c.contains("vars")) p.extra_json = vars.c_str();
    if (c.contains("bos_token")) p.bos_token = bos.c_str();
    if (c.contains("eos_token")) p.eos_token = eos.c_str();
    char err[2048];
    size_t len = 0;
    std::string text(4096, '\0');
    lmrt_status s =
        lmrt_chat_apply_template(nullptr, messages.c_str(), &p, text.data(), text.size(), &len, err, sizeof err);
    if (s == LMRT_ERR_BUFFER_TOO_SMALL) {
      text.assign(len + 1, '\0');
      s = lmrt_chat_apply_template(nullptr, messages.c_str(), &p, text.data(), text.size(), &len, err, sizeof err);
    }
    nlohmann::ordered_json r;
    if (s == LMRT_OK) {
      r["status"] = "OK";
      r["text"] = text.substr(0, len);
    } else {
      const std::string m = err;
      const std::string marker = "raise_exception: ";
      r["status"] = m.rfind(marker, 0) == 0 ? "RAISE" : "ERROR";
      r["text"] = m.rfind(marker, 0) == 0 ? m.substr(marker.size()) : m;
    }
    results.push_back(r);
  }
  std::cout << results.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return 0;
}
