// lmrt info: the model summary (architecture, sizes, tensor type mix).
#include <cstdio>
#include <string>
#include <vector>

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
  // The tensor type mix, every type the file holds (lmrt_model_tensor_types enumerates them).
  std::vector<lmrt_tensor_type_info> mix;
  uint32_t n_types = 0;
  if (lmrt_model_tensor_types(model, 0, nullptr, &n_types) != LMRT_OK) {
    cli::print_error("info", lmrt_model_last_error(model));
    lmrt_model_close(model);
    return 1;
  }
  for (uint32_t i = 0; i < n_types; ++i) {
    lmrt_tensor_type_info t;
    t.struct_size = sizeof t;
    if (lmrt_model_tensor_types(model, i, &t, nullptr) != LMRT_OK) {
      cli::print_error("info", lmrt_model_last_error(model));
      lmrt_model_close(model);
      return 1;
    }
    mix.push_back(t);
  }
  if (args.has("json")) {
    std::string types;
    for (const lmrt_tensor_type_info& t : mix) {
      if (!types.empty()) types += ",";
      types += cli::json_string(t.name) + ":{\"tensors\":" + std::to_string(t.n_tensors) +
               ",\"elements\":" + std::to_string(t.n_elements) + ",\"bytes\":" + std::to_string(t.n_bytes) + "}";
    }
    std::printf(
        "{\"architecture\":%s,\"name\":%s,\"n_params\":%llu,\"file_bytes\":%llu,\"n_ctx_train\":%u,"
        "\"n_vocab\":%u,\"n_embd\":%u,\"n_layer\":%u,\"n_head\":%u,\"n_head_kv\":%u,\"n_ff\":%u,"
        "\"bos_token\":%d,\"eos_token\":%d,\"tensor_types\":{%s}}\n",
        cli::json_string(info.architecture).c_str(), cli::json_string(info.name).c_str(),
        static_cast<unsigned long long>(info.n_params), static_cast<unsigned long long>(info.file_bytes),
        info.n_ctx_train, info.n_vocab, info.n_embd, info.n_layer, info.n_head, info.n_head_kv, info.n_ff,
        info.bos_token, info.eos_token, types.c_str());
  } else {
    std::printf("architecture  %s\nname          %s\nparameters    %llu\nfile bytes    %llu\n", info.architecture,
                info.name, static_cast<unsigned long long>(info.n_params),
                static_cast<unsigned long long>(info.file_bytes));
    std::printf("context       %u (training)\nvocabulary    %u (bos %d, eos %d)\n", info.n_ctx_train, info.n_vocab,
                info.bos_token, info.eos_token);
    std::printf("dimensions    embd %u, layers %u, heads %u, kv heads %u, ffn %u\n", info.n_embd, info.n_layer,
                info.n_head, info.n_head_kv, info.n_ff);
    for (const lmrt_tensor_type_info& t : mix)
      std::printf("tensors %-7s %u (%llu elements, %llu bytes)\n", t.name, t.n_tensors,
                  static_cast<unsigned long long>(t.n_elements), static_cast<unsigned long long>(t.n_bytes));
  }
  lmrt_model_close(model);
  return 0;
}
