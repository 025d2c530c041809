// lmrt info: the model summary (architecture and its fields, sizes, tokenizer and special tokens, tensor
// type mix).
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
  lmrt_model_arch arch;
  arch.struct_size = sizeof arch;
  lmrt_tokenizer_info tok;
  tok.struct_size = sizeof tok;
  // The tensor type mix, every type the file holds (lmrt_model_tensor_types enumerates them).
  std::vector<lmrt_tensor_type_info> mix;
  uint32_t n_types = 0;
  if (lmrt_model_get_arch(model, &arch) != LMRT_OK || lmrt_model_get_tokenizer_info(model, &tok) != LMRT_OK ||
      lmrt_model_tensor_types(model, 0, nullptr, &n_types) != LMRT_OK) {
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
  std::string eog;
  for (uint32_t i = 0; i < tok.n_eog_tokens && i < sizeof tok.eog_tokens / sizeof tok.eog_tokens[0]; ++i)
    eog += (i == 0 ? "" : ",") + std::to_string(tok.eog_tokens[i]);
  // The block's optional parts, by their lmrt_model_arch flag.
  const struct {
    uint32_t flag;
    const char* name;
  } parts[] = {{LMRT_ARCH_POST_ATTN_NORM, "post_attn_norm"},
               {LMRT_ARCH_POST_FFN_NORM, "post_ffn_norm"},
               {LMRT_ARCH_QK_NORM, "qk_norm"},
               {LMRT_ARCH_QKV_BIAS, "qkv_bias"},
               {LMRT_ARCH_OUTPUT_BIAS, "output_bias"},
               {LMRT_ARCH_FUSED_QKV, "fused_qkv"},
               {LMRT_ARCH_FUSED_GATE_UP, "fused_gate_up"},
               {LMRT_ARCH_TIED_OUTPUT, "tied_output"},
               {LMRT_ARCH_ROPE_FACTORS, "rope_factors"}};
  const char* rope_style = arch.rope_style == LMRT_ROPE_NEOX ? "neox" : "adjacent";
  const char* activation = arch.activation == LMRT_ACTIVATION_GELU_TANH ? "gelu_tanh" : "swiglu";
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
        "\"bos_token\":%d,\"eos_token\":%d,\"tokenizer\":{\"model\":%s,\"pre\":%s,\"bos\":%d,\"eos\":%d,"
        "\"eot\":%d,\"eom\":%d,\"unk\":%d,\"add_bos\":%s,\"add_eos\":%s,\"eog\":[%s]},\"tensor_types\":{%s},",
        cli::json_string(info.architecture).c_str(), cli::json_string(info.name).c_str(),
        static_cast<unsigned long long>(info.n_params), static_cast<unsigned long long>(info.file_bytes),
        info.n_ctx_train, info.n_vocab, info.n_embd, info.n_layer, info.n_head, info.n_head_kv, info.n_ff,
        info.bos_token, info.eos_token, cli::json_string(tok.model).c_str(), cli::json_string(tok.pre).c_str(),
        tok.bos_token, tok.eos_token, tok.eot_token, tok.eom_token, tok.unk_token, tok.add_bos ? "true" : "false",
        tok.add_eos ? "true" : "false", eog.c_str(), types.c_str());
    std::string flags;
    for (const auto& p : parts)
      flags += std::string(",\"") + p.name + "\":" + ((arch.flags & p.flag) ? "true" : "false");
    std::printf(
        "\"arch\":{\"head_dim\":%u,\"rope_dim\":%u,\"rope_style\":\"%s\",\"rope_freq_base\":%g,"
        "\"rope_freq_base_local\":%g,\"rope_freq_scale\":%g,\"activation\":\"%s\",\"sliding_window\":%u,"
        "\"n_windowed_layers\":%u,\"rms_eps\":%g,\"embd_scale\":%g,\"attn_scale\":%g,\"attn_softcap\":%g,"
        "\"final_softcap\":%g%s}}\n",
        arch.head_dim, arch.rope_dim, rope_style, arch.rope_freq_base, arch.rope_freq_base_local, arch.rope_freq_scale,
        activation, arch.sliding_window, arch.n_windowed_layers, arch.rms_eps, arch.embd_scale, arch.attn_scale,
        arch.attn_softcap, arch.final_softcap, flags.c_str());
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
    std::printf("attention     head_dim %u, scale %g, softcap %g (0: none)\n", arch.head_dim, arch.attn_scale,
                arch.attn_softcap);
    std::printf("window        %u positions on %u of %u layers (0: none)\n", arch.sliding_window,
                arch.n_windowed_layers, info.n_layer);
    std::printf("rope          %s, %u dims, base %g, windowed layers' base %g (0: the same), scale %g\n", rope_style,
                arch.rope_dim, arch.rope_freq_base, arch.rope_freq_base_local, arch.rope_freq_scale);
    std::printf("block         rmsnorm eps %g, ffn %s, embedding scale %g, logit softcap %g (0: none)\n", arch.rms_eps,
                activation, arch.embd_scale, arch.final_softcap);
    std::string flags;
    for (const auto& p : parts)
      if (arch.flags & p.flag) flags += std::string(flags.empty() ? "" : ", ") + p.name;
    std::printf("parts         %s\n", flags.empty() ? "(none)" : flags.c_str());
    for (const lmrt_tensor_type_info& t : mix)
      std::printf("tensors %-7s %u (%llu elements, %llu bytes)\n", t.name, t.n_tensors,
                  static_cast<unsigned long long>(t.n_elements), static_cast<unsigned long long>(t.n_bytes));
  }
  lmrt_model_close(model);
  return 0;
}
