// Grammars for callers that build their own: a JSON Schema as the GBNF the grammar sampler reads,
// and a check of GBNF text before it is given to a generation.
#include <cstring>
#include <memory>

#include "abi/api_support.h"
#include "lmrt/lmrt.h"
#include "runtime/grammar/gbnf_parser.h"
#include "runtime/grammar/json_schema.h"
#include "runtime/grammar/matcher.h"

using lmrt::Code;
using lmrt::Status;
using namespace lmrt::abi;

extern "C" {

lmrt_status lmrt_json_schema_to_grammar(const char* schema_json, char* buf, size_t capacity, size_t* len, char* err,
                                        size_t err_size) {
  return guarded(
      [&]() -> Status {
        if (schema_json == nullptr || len == nullptr || (buf == nullptr && capacity != 0))
          return lmrt::Error(Code::invalid_argument, "schema_json and len must not be NULL (nor buf with a capacity)");
        std::string gbnf;
        LMRT_RETURN_IF_ERROR(lmrt::json_schema_to_gbnf(schema_json, &gbnf));
        *len = gbnf.size();
        if (gbnf.size() + 1 > capacity)
          return lmrt::Error(Code::buffer_too_small,
                             "the grammar needs " + std::to_string(gbnf.size() + 1) + " bytes with its NUL");
        std::memcpy(buf, gbnf.c_str(), gbnf.size() + 1);
        return Status::Ok();
      },
      [&](const std::string& m) { copy_message(m, err, err_size); });
}

lmrt_status lmrt_grammar_check(const char* gbnf, char* err, size_t err_size) {
  return guarded(
      [&]() -> Status {
        if (gbnf == nullptr) return lmrt::Error(Code::invalid_argument, "gbnf must not be NULL");
        // What the grammar sampler does before it needs the vocabulary: parse, then expand the root.
        auto grammar = std::make_shared<lmrt::Grammar>();
        LMRT_RETURN_IF_ERROR(lmrt::parse_gbnf(gbnf, grammar.get()));
        std::unique_ptr<lmrt::GrammarMatcher> matcher;
        return lmrt::GrammarMatcher::create(std::move(grammar), &matcher);
      },
      [&](const std::string& m) { copy_message(m, err, err_size); });
}

}  // extern "C"
