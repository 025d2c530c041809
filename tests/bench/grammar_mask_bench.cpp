// Cost of constrained decoding on a real vocabulary, without a model: compiling a nested JSON
// Schema (translate + parse + start the matcher) and computing the allowed-token mask at every
// token of a valid document, tokenized by the vocabulary (the work the grammar sampler adds to one
// decode step: the mask, then advancing by the chosen token), and, as the grammar checked last
// costs when the picked token is allowed, one token's check and the advance.
//   grammar_mask_bench VOCAB.gguf [GRAMMAR.gbnf DOCUMENT | SCHEMA.json [DOCUMENT]]
// (default: the nested JSON Schema of tests/bench/nested-schema.json and a document valid against it)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/grammar/gbnf_parser.h"
#include "runtime/grammar/json_schema.h"
#include "runtime/grammar/matcher.h"
#include "runtime/grammar/token_trie.h"
#include "runtime/model/gguf_file.h"
#include "runtime/tokenizer/tokenizer.h"
#include "runtime/tokenizer/vocab.h"

using namespace lmrt;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

const char* kNestedSchema = R"({"type":"object","properties":{
  "user":{"type":"object","properties":{"name":{"type":"string","maxLength":40},"email":{"type":"string","format":"email"},
    "address":{"type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"},
      "zip":{"type":"string","minLength":5,"maxLength":5}},"required":["street","city","zip"]}},
    "required":["name","address"]},
  "orders":{"type":"array","items":{"type":"object","properties":{"id":{"type":"integer","minimum":1},
    "total":{"type":"number","minimum":0,"maximum":100000},"items":{"type":"array","items":{"type":"string"},"maxItems":10}},
    "required":["id","total","items"]},"maxItems":20},
  "active":{"type":"boolean"}},"required":["user","orders","active"]})";

const char* kDocument =
    R"({ "user": { "name": "Ada Lovelace", "address": { "street": "12 St James's Square", "city": "London", "zip": "SW1Y4"}}, "orders": [ { "id": 17, "total": 99.5, "items": [ "notebook", "pencil"]}, { "id": 18, "total": 1200, "items": []}], "active": true})";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: grammar_mask_bench VOCAB.gguf [GRAMMAR.gbnf DOCUMENT | SCHEMA.json [DOCUMENT]]\n");
    return 2;
  }
  std::unique_ptr<GgufFile> gguf;
  std::unique_ptr<Tokenizer> tok;
  Status s = GgufFile::open(argv[1], true, &gguf);
  if (s.ok()) s = Tokenizer::from_gguf(*gguf, &tok);
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.message().c_str());
    return 1;
  }
  auto t0 = Clock::now();
  std::shared_ptr<const TokenTrie> trie;
  s = make_token_trie(*tok, &trie);
  const double trie_ms = ms_since(t0);

  std::string gbnf;
  auto g = std::make_shared<Grammar>();
  std::unique_ptr<GrammarMatcher> m;
  std::string doc = kDocument;
  const std::string grammar_path = argc >= 3 ? argv[2] : "";
  const bool schema_file = grammar_path.size() > 5 && grammar_path.ends_with(".json");
  if (argc >= 4) {
    std::ifstream d_in(argv[3]);
    std::stringstream d_text;
    d_text << d_in.rdbuf();
    doc = d_text.str();
    while (!doc.empty() && doc.back() == '\n') doc.pop_back();
  }
  std::string grammar_text = kNestedSchema;
  if (!grammar_path.empty()) {
    std::ifstream g_in(grammar_path);
    std::stringstream g_text;
    g_text << g_in.rdbuf();
    grammar_text = g_text.str();
  }
  // Timed from here: translating a schema (when it is one), parsing the GBNF, starting the matcher.
  t0 = Clock::now();
  if (s.ok() && (grammar_path.empty() || schema_file)) {
    s = json_schema_to_gbnf(grammar_text, &gbnf);
  } else {
    gbnf = grammar_text;
  }
  if (s.ok()) s = parse_gbnf(gbnf, g.get());
  if (s.ok()) s = GrammarMatcher::create(g, &m);
  const double compile_ms = ms_since(t0);
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.message().c_str());
    return 1;
  }
  // Tokens as a model would emit them mid-text: longest vocabulary piece first (SentencePiece's
  // tokenize() would add a leading space to the document).
  std::unordered_map<std::string, int32_t> by_piece;
  for (int32_t id = 0; id < trie->n_vocab(); ++id)
    if (!trie->piece(id).empty() && !trie->is_end(id)) by_piece.emplace(trie->piece(id), id);
  std::vector<int32_t> ids;
  for (size_t i = 0; i < doc.size();) {
    size_t len = std::min<size_t>(doc.size() - i, trie->max_depth());
    while (len > 0 && by_piece.count(doc.substr(i, len)) == 0) --len;
    if (len == 0) {
      std::fprintf(stderr, "no token for byte %zu\n", i);
      return 1;
    }
    ids.push_back(by_piece[doc.substr(i, len)]);
    i += len;
  }
  std::vector<double> step_ms;
  std::vector<uint8_t> mask;
  size_t allowed_sum = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    t0 = Clock::now();
    m->fill_mask(*trie, &mask);
    const bool ok = mask[static_cast<size_t>(ids[i])] != 0 && m->advance(trie->piece(ids[i]));
    step_ms.push_back(ms_since(t0));
    for (uint8_t a : mask) allowed_sum += a;
    if (!ok) {
      std::fprintf(stderr, "document rejected at token %zu (%d)\n", i, ids[i]);
      return 1;
    }
  }
  // The grammar checked last (SamplerChain::sample): when the picked token is allowed, one check of
  // that token and the advance replace the mask.
  std::vector<double> check_ms;
  m->reset();
  for (size_t i = 0; i < ids.size(); ++i) {
    t0 = Clock::now();
    const bool ok = m->allows(trie->piece(ids[i])) && m->advance(trie->piece(ids[i]));
    check_ms.push_back(ms_since(t0));
    if (!ok) {
      std::fprintf(stderr, "document rejected at token %zu (%d) by the single check\n", i, ids[i]);
      return 1;
    }
  }
  std::sort(check_ms.begin(), check_ms.end());
  double check_sum = 0;
  for (double v : check_ms) check_sum += v;
  std::sort(step_ms.begin(), step_ms.end());
  double sum = 0;
  for (double v : step_ms) sum += v;
  std::printf("vocab %d tokens, trie %zu nodes built in %.1f ms\n", tok->n_vocab(), trie->nodes().size(), trie_ms);
  std::printf("grammar compiled in %.2f ms (%zu bytes of GBNF, %zu rules)\n", compile_ms, gbnf.size(), g->rules.size());
  std::printf(
      "mask + advance per token over %zu tokens: mean %.3f ms, median %.3f ms, p90 %.3f ms, max %.3f ms; %.0f tokens "
      "allowed on average\n",
      step_ms.size(), sum / step_ms.size(), step_ms[step_ms.size() / 2], step_ms[step_ms.size() * 9 / 10],
      step_ms.back(), static_cast<double>(allowed_sum) / step_ms.size());
  std::printf(
      "check + advance per token (the picked token allowed): mean %.4f ms, median %.4f ms, p90 %.4f ms, max %.4f ms\n",
      check_sum / check_ms.size(), check_ms[check_ms.size() / 2], check_ms[check_ms.size() * 9 / 10], check_ms.back());
  return 0;
}
