// Streams a greedy completion through lmrt's C API, with C++ RAII over the handles.
// usage: lmrt-stream-cpp MODEL [PROMPT] [MAX_TOKENS]
#include <lmrt/lmrt.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

namespace {

struct ModelCloser {
  void operator()(lmrt_model* m) const { lmrt_model_close(m); }
};
struct ContextFreer {
  void operator()(lmrt_context* c) const { lmrt_context_free(c); }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL [PROMPT] [MAX_TOKENS]\n", argv[0]);
    return 2;
  }
  const std::string prompt = argc > 2 ? argv[2] : "Once upon a time";
  const int max_tokens = argc > 3 ? std::atoi(argv[3]) : 128;
  char err[512] = {0};

  lmrt_model* raw_model = nullptr;
  lmrt_status s = lmrt_model_open(argv[1], nullptr, &raw_model, err, sizeof err);
  if (s != LMRT_OK) {
    std::fprintf(stderr, "cannot open %s: %s: %s\n", argv[1], lmrt_status_str(s), err);
    return 1;
  }
  std::unique_ptr<lmrt_model, ModelCloser> model(raw_model);

  lmrt_context_params cp;
  lmrt_context_params_init(&cp);
  cp.n_ctx = 256;
  cp.n_threads = 2;
  lmrt_context* raw_ctx = nullptr;
  s = lmrt_context_create(model.get(), &cp, &raw_ctx, err, sizeof err);
  if (s != LMRT_OK) {
    std::fprintf(stderr, "cannot create a context: %s: %s\n", lmrt_status_str(s), err);
    return 1;
  }
  std::unique_ptr<lmrt_context, ContextFreer> ctx(raw_ctx);  // declared after model: freed first

  lmrt_generate_request req;
  lmrt_generate_request_init(&req);
  req.prompt = prompt.data();
  req.prompt_len = prompt.size();
  req.max_tokens = max_tokens;
  lmrt_generate_result res{};
  res.struct_size = sizeof res;
  auto print_piece = [](void*, const lmrt_token_event* ev) -> int {
    std::fwrite(ev->text, 1, ev->text_len, stdout);
    std::fflush(stdout);
    return 0;
  };
  s = lmrt_generate(ctx.get(), &req, print_piece, nullptr, &res);
  if (s != LMRT_OK) {
    std::fprintf(stderr, "generation failed: %s: %s\n", lmrt_status_str(s), lmrt_context_last_error(ctx.get()));
    return 1;
  }
  std::printf("\n");
  std::fprintf(stderr, "[%s: %u prompt + %u generated tokens]\n", lmrt_finish_reason_str(res.finish_reason),
               res.prompt_tokens, res.completion_tokens);
  return 0;
}
