// lmrt info: the model summary (architecture, sizes, tokenizer and special tokens, tensor type mix).
#include <cstdio>
#include <string>

#include "cli_common.h"

int cmd_info(int argc, char** argv) {
  cli::Args args;
  std::string error;
  if (!cli::parse_args(argc, argv, 2, {{"model", "m", true}, {"json", "", false}}, &args, &error)) {
    cli::print_error("info", error);
    return 2;
  }
  lmrt_model* model = cli::open_model(cli::model_path(args));
  if (model == nullptr) return 1;
  lmrt_model_info info;
  info.struct_size = sizeof info;
  const lmrt_status s = lmrt_model_get_info(model, &info);
  if (s != LMRT_OK) {
    cli::print_error("info", lmrt_model_last_error(model));
    lmrt_model_close(model);
    return 1;
  }
  lmrt_tokenizer_info tok;
  tok.struct_size = sizeof tok;
  if (lmrt_model_get_tokenizer_info(model, &tok) != LMRT_OK) {
    cli::print_error("info", lmrt_model_last_error(model));
    lmrt_model_close(model);
    return 1;
  }
  std::string eog;
  for (uint32_t i = 0; i < tok.n_eog_tokens && i < sizeof tok.eog_tokens / sizeof tok.eog_tokens[0]; ++i)
    eog += (i == 0 ? "" : ",") + std::to_string(tok.eog_tokens[i]);
  struct Mix {
    const char* name;
    uint32_t n;
    uint64_t bytes;
  } mix[] = {{"F32", info.n_tensors_f32, info.bytes_f32},
             {"F16", info.n_tensors_f16, info.bytes_f16},
             {"BF16", info.n_tensors_bf16, info.bytes_bf16},
             {"Q8_0", info.n_tensors_q8_0, info.bytes_q8_0},
             {"Q4_0", info.n_tensors_q4_0, info.bytes_q4_0}};
  if (args.has("json")) {
    std::string types;
    for (const Mix& m : mix) {
      if (m.n == 0) continue;
      if (!types.empty()) types += ",";
      types += "\"" + std::string(m.name) + "\":{\"tensors\":" + std::to_string(m.n) +
               ",\"bytes\":" + std::to_string(m.bytes) + "}";
    }
    std::printf(
        "{\"architecture\":%s,\"name\":%s,\"n_params\":%llu,\"file_bytes\":%llu,\"n_ctx_train\":%u,"
        "\"n_vocab\":%u,\"n_embd\":%u,\"n_layer\":%u,\"n_head\":%u,\"n_head_kv\":%u,\"n_ff\":%u,"
        "\"bos_token\":%d,\"eos_token\":%d,\"tokenizer\":{\"model\":%s,\"pre\":%s,\"bos\":%d,\"eos\":%d,"
        "\"eot\":%d,\"eom\":%d,\"unk\":%d,\"add_bos\":%s,\"add_eos\":%s,\"eog\":[%s]},\"tensor_types\":{%s}}\n",
        cli::json_string(info.architecture).c_str(), cli::json_string(info.name).c_str(),
        static_cast<unsigned long long>(info.n_params), static_cast<unsigned long long>(info.file_bytes),
        info.n_ctx_train, info.n_vocab, info.n_embd, info.n_layer, info.n_head, info.n_head_kv, info.n_ff,
        info.bos_token, info.eos_token, cli::json_string(tok.model).c_str(), cli::json_string(tok.pre).c_str(),
        tok.bos_token, tok.eos_token, tok.eot_token, tok.eom_token, tok.unk_token, tok.add_bos ? "true" : "false",
        tok.add_eos ? "true" : "false", eog.c_str(), types.c_str());
  } else {
    std::printf("architecture  %s\nname          %s\nparameters    %llu\nfile bytes    %llu\n", info.architecture,
                info.name, static_cast<unsigned long long>(info.n_params),
                static_cast<unsigned long long>(info.file_bytes));
    std::printf("context       %u (training)\nvocabulary    %u (bos %d, eos %d)\n", info.n_ctx_train, info.n_vocab,
                info.bos_token, info.eos_token);
    std::printf("tokenizer     %s%s%s (bos %d, eos %d, eot %d, eom %d, unk %d; adds bos: %s, eos: %s)\n", tok.model,
                tok.pre[0] != '\0' ? ", pre-tokenizer " : "", tok.pre, tok.bos_token, tok.eos_token, tok.eot_token,
                tok.eom_token, tok.unk_token, tok.add_bos ? "yes" : "no", tok.add_eos ? "yes" : "no");
    std::printf("end of gen.   %s\n", eog.c_str());
    std::printf("dimensions    embd %u, layers %u, heads %u, kv heads %u, ffn %u\n", info.n_embd, info.n_layer,
                info.n_head, info.n_head_kv, info.n_ff);
    for (const Mix& m : mix)
      if (m.n != 0)
        std::printf("tensors %-5s %u (%llu bytes)\n", m.name, m.n, static_cast<unsigned long long>(m.bytes));
  }
  lmrt_model_close(model);
  return 0;
}
