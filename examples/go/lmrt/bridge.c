// The C side of streaming: lmrt calls lmrt_go_on_token (and an engine lmrt_go_on_finish), which
// hands the event to Go together with the cgo.Handle of the Go generation state (carried through
// user_data).
#include <stdint.h>

#include "_cgo_export.h"

static int lmrt_go_on_token(void* user_data, const lmrt_token_event* event) {
  return goOnToken((uintptr_t)user_data, (lmrt_token_event*)event);
}

lmrt_status lmrt_go_generate(lmrt_context* ctx, const lmrt_generate_request* request, uintptr_t handle,
                             lmrt_generate_result* result) {
  return lmrt_generate(ctx, request, lmrt_go_on_token, (void*)handle, result);
}

lmrt_status lmrt_go_engine_submit(lmrt_engine* engine, const lmrt_generate_request* request, uintptr_t handle,
                                  uint64_t* request_id) {
  return lmrt_engine_submit(engine, request, lmrt_go_on_token, (void*)handle, request_id);
}

static void lmrt_go_on_finish(void* user_data, uint64_t request_id, lmrt_finish_reason finish_reason) {
  (void)request_id;
  goOnFinish((uintptr_t)user_data, (int)finish_reason);
}

void lmrt_go_engine_params_notify(lmrt_engine_params* params) { params->on_finish = lmrt_go_on_finish; }
