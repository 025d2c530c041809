// Constrained generation: the GBNF parser (errors with line:col, hostile input), the matcher
// (accepts/rejects strings, UTF-8 split across tokens), the token-trie mask against a per-token
// check on a real vocabulary, JSON Schema translation errors, and constrained generations through
// the C API on the tiny story model whose outputs are checked by an independent parser.
#include <gtest/gtest.h>
#include <lmrt/lmrt.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "runtime/grammar/gbnf_parser.h"
#include "runtime/grammar/json_schema.h"
#include "runtime/grammar/matcher.h"
#include "runtime/grammar/token_trie.h"
#include "runtime/model/gguf_file.h"
#include "runtime/tokenizer/tokenizer.h"
#include "runtime/tokenizer/vocab.h"
#include "test_support.h"

namespace lmrt {
namespace {

std::shared_ptr<const Grammar> parse_ok(const std::string& text) {
  auto g = std::make_shared<Grammar>();
  const Status s = parse_gbnf(text, g.get());
  EXPECT_TRUE(s.ok()) << s.message() << "\n" << text;
  return g;
}

std::string parse_error(const std::string& text) {
  Grammar g;
  const Status s = parse_gbnf(text, &g);
  EXPECT_FALSE(s.ok()) << text;
  EXPECT_EQ(s.code(), Code::invalid_argument);
  return s.message();
}

// Whether the whole text is a sentence of the grammar (fed in pieces of `chunk` bytes).
bool full_match(const std::shared_ptr<const Grammar>& g, const std::string& text, size_t chunk = 1) {
  std::unique_ptr<GrammarMatcher> m;
  const Status s = GrammarMatcher::create(g, &m);
  EXPECT_TRUE(s.ok()) << s.message();
  if (!s.ok()) return false;
  for (size_t i = 0; i < text.size(); i += chunk)
    if (!m->advance(text.substr(i, chunk))) return false;
  return m->accepting();
}

TEST(GbnfParser, ErrorsNameLineAndColumn) {
  EXPECT_NE(parse_error("root ::= \"a\"\nfoo ::= bar\n").find("gbnf 2:9: rule 'bar' is used but never defined"),
            std::string::npos);
  EXPECT_NE(parse_error("root ::= \"abc\n").find("gbnf 2:1: unterminated string"), std::string::npos);
  EXPECT_NE(parse_error("root := \"a\"").find("gbnf 1:6: expected '::='"), std::string::npos);
  EXPECT_NE(parse_error("root ::= [a-z\n").find("unterminated character class"), std::string::npos);
  EXPECT_NE(parse_error("root ::= ( \"a\" \n").find("expected ')'"), std::string::npos);
  EXPECT_NE(parse_error("root ::= * \"a\"").find("gbnf 1:10: '*' follows nothing"), std::string::npos);
  EXPECT_NE(parse_error("root ::= \"a\"{3,2}").find("n < m"), std::string::npos);
  EXPECT_NE(parse_error("root ::= [z-a]").find("reversed"), std::string::npos);
  EXPECT_NE(parse_error("root ::= \"\\q\"").find("unknown escape"), std::string::npos);
  EXPECT_NE(parse_error("root ::= \"\\uD800\"").find("surrogate"), std::string::npos);
  EXPECT_NE(parse_error("root ::= [\\uDFFF-\\uE000]").find("surrogate"), std::string::npos);
  EXPECT_NE(parse_error("a ::= \"x\"\n").find("no 'root' rule"), std::string::npos);
  EXPECT_NE(parse_error("root ::= \"a\"\nroot ::= \"b\"\n").find("gbnf 2:1: rule 'root' is defined twice"),
            std::string::npos);
  EXPECT_NE(parse_error("root ::= expr\nexpr ::= expr \"+\" [0-9] | [0-9]\n").find("'expr' is left-recursive"),
            std::string::npos);
  // Left recursion through a nullable prefix is found too.
  EXPECT_NE(parse_error("root ::= a\na ::= b? a \"x\" | \"y\"\nb ::= \"z\"\n").find("left-recursive"),
            std::string::npos);
}

TEST(GbnfParser, HostileInputIsRefusedNotCrashed) {
  EXPECT_NE(parse_error("root ::= " + std::string(5000, '(') + "\"a\"" + std::string(5000, ')')).find("nested deeper"),
            std::string::npos);
  EXPECT_NE(parse_error("root ::= \"a\"{1000000}").find("repetition count above"), std::string::npos);
  // Nested repetitions stay linear (a repeated group is one rule); the element budget still holds.
  std::string big = "root ::= a0\n";
  for (int i = 0; i < 1100; ++i) big += "a" + std::to_string(i) + " ::= \"x\"{1000} a" + std::to_string(i + 1) + "\n";
  big += "a1100 ::= \"x\"\n";
  EXPECT_NE(parse_error(big).find("exceeds"), std::string::npos);
  parse_error(std::string("root ::= \"\xff\""));  // invalid UTF-8 in a string
  parse_error("root ::= \"a\" )");
}

TEST(GbnfParser, MutatedGrammarsParseOrFailCleanly) {
  // Random edits of a valid grammar: each either parses (and then runs on random pieces) or is a
  // clear error; none crashes, hangs or trips the sanitizers (the CI runs this under ASan+UBSan).
  const std::string base =
      "root ::= \"{\" ws (pair (\",\" ws pair)*)? \"}\"\n"
      "pair ::= [a-z]+ \":\" ws (\"true\" | [0-9]{1,3} | \"\\\"\" [^\"\\\\]* \"\\\"\" | root)\n"
      "ws ::= [ \\t\\n]? # comment\n";
  ASSERT_TRUE(full_match(parse_ok(base), "{a:1, b:{c:\"x\"}}"));
  const std::string alphabet = "()[]{}|*+?.\"\\:=^-,# \n\tabcxyz019rootws";
  std::mt19937 rng(42);
  int parsed = 0;
  for (int it = 0; it < 3000; ++it) {
    std::string g = base;
    for (int k = 0, n = 1 + static_cast<int>(rng() % 6); k < n; ++k) {
      const size_t pos = rng() % (g.size() + 1);
      const char c = alphabet[rng() % alphabet.size()];
      if (rng() % 2 == 0 && pos < g.size())
        g.erase(pos, 1);
      else
        g.insert(pos, 1, c);
    }
    auto grammar = std::make_shared<Grammar>();
    const Status s = parse_gbnf(g, grammar.get());
    if (!s.ok()) {
      EXPECT_EQ(s.message().rfind("gbnf ", 0), 0u) << s.message();
      continue;
    }
    ++parsed;
    std::unique_ptr<GrammarMatcher> m;
    if (!GrammarMatcher::create(grammar, &m).ok()) continue;
    for (int k = 0; k < 30; ++k) {
      std::string piece(1 + rng() % 3, ' ');
      for (char& c : piece) c = "{}a:1\" ,tre\xc3\xa9"[rng() % 14];
      (void)m->allows(piece);
      (void)m->advance(piece);
      (void)m->accepting();
    }
  }
  EXPECT_GT(parsed, 100);  // the mutants reach the matcher, not only the error paths
}

TEST(GbnfParser, ParsesLlamaCppGrammar) {
  // The oracle's grammar file, written for llama.cpp.
  const std::string text = test::read_file(test::shared_dir() + "/peers/llamacpp/oracle/json_two_strings.gbnf");
  ASSERT_FALSE(text.empty());
  auto g = parse_ok(text);
  EXPECT_TRUE(full_match(g, R"({"name":"Lily", "city" : "Paris"})"));
  EXPECT_TRUE(full_match(g, R"({"name":"a\"b\u00e9","city":""})"));
  EXPECT_FALSE(full_match(g, R"({"name":"Lily"})"));
  EXPECT_FALSE(full_match(g, R"({"name":"Lily","city":"Paris"})"
                             " "));
}

TEST(GrammarMatcher, AcceptsAndRejectsStrings) {
  auto g = parse_ok(R"(# comments and every element kind
root   ::= greet " " name ("," [ ]? name){0,2} "!"? tail
greet  ::= "hi" | "hello"
name   ::= [A-Z] [a-z]+ | "\u00c9" "mile"
tail   ::= [^a-z\n]* | "." .
)");
  EXPECT_TRUE(full_match(g, "hi Tom"));
  EXPECT_TRUE(full_match(g, "hello Tom, Ann,Bob!"));
  EXPECT_TRUE(full_match(g, "hello \xC3\x89mile!"));
  EXPECT_TRUE(full_match(g, "hi Tom.z"));
  EXPECT_TRUE(full_match(g, "hi Tom123 #"));
  EXPECT_TRUE(full_match(g, "hello \xC3\x89mile, Ann", 3));  // bytes of one character split
  EXPECT_FALSE(full_match(g, "hi tom"));                     // [A-Z]
  EXPECT_FALSE(full_match(g, "hi T"));                       // [a-z]+ needs one
  EXPECT_FALSE(full_match(g, "hi Tom, A, Bo, Cy"));          // {0,2}
  EXPECT_FALSE(full_match(g, "hi Tom!x"));                   // [^a-z\n]
  EXPECT_FALSE(full_match(g, "hey Tom"));
  EXPECT_FALSE(full_match(g, "hi"));  // incomplete
  EXPECT_FALSE(full_match(g, "hi Tom.zz"));
  // An overlong encoding of "T" (C1 94) is not "T".
  EXPECT_FALSE(full_match(g, "hi \xC1\x94om"));
  // A rejected advance leaves the state unchanged.
  std::unique_ptr<GrammarMatcher> m;
  ASSERT_TRUE(GrammarMatcher::create(g, &m).ok());
  ASSERT_TRUE(m->advance("hi "));
  EXPECT_FALSE(m->advance("tom"));
  EXPECT_TRUE(m->allows("Tom"));
  EXPECT_TRUE(m->advance("Tom"));
  EXPECT_TRUE(m->accepting());
  EXPECT_TRUE(m->can_continue());
  m->reset();
  EXPECT_FALSE(m->accepting());
  EXPECT_TRUE(m->advance("hello Ann"));
}

TEST(GrammarMatcher, RightRecursionAndStarsStayFlat) {
  // 20000 iterations of a star and of right recursion: no stack growth, no overflow.
  auto g = parse_ok("root ::= (\"ab\" | \"a\")* list\nlist ::= \"x\" list | \"y\"\n");
  std::string text;
  for (int i = 0; i < 10000; ++i) text += "ab";
  for (int i = 0; i < 10000; ++i) text += "x";
  EXPECT_TRUE(full_match(g, text + "y", 64));
  EXPECT_FALSE(full_match(g, text + "yy", 64));
}

std::unique_ptr<Tokenizer> story_tokenizer() {
  std::unique_ptr<GgufFile> gguf;
  Status s = GgufFile::open(test::model_path("stories260K.gguf"), true, &gguf);
  EXPECT_TRUE(s.ok()) << s.message();
  if (!s.ok()) return nullptr;
  std::unique_ptr<Tokenizer> tok;
  s = Tokenizer::from_gguf(*gguf, &tok);
  EXPECT_TRUE(s.ok()) << s.message();
  return tok;
}

TEST(GrammarMatcher, TrieMaskEqualsPerTokenCheck) {
  auto tok = story_tokenizer();
  ASSERT_NE(tok, nullptr);
  std::shared_ptr<const TokenTrie> trie;
  ASSERT_TRUE(make_token_trie(*tok, &trie).ok());
  ASSERT_EQ(trie->n_vocab(), tok->n_vocab());
  EXPECT_TRUE(trie->is_end(tok->eos()));
  std::string gbnf;
  ASSERT_TRUE(json_schema_to_gbnf(R"({"type":"object","properties":{"name":{"type":"string","maxLength":12},
      "age":{"type":"integer","minimum":0,"maximum":120},"tags":{"type":"array","items":{"enum":["é","b"]}}},
      "required":["name","age","tags"]})",
                                  &gbnf)
                  .ok());
  auto g = parse_ok(gbnf);
  std::unique_ptr<GrammarMatcher> m;
  ASSERT_TRUE(GrammarMatcher::create(g, &m).ok());
  // Walk a valid document; at each prefix the trie mask must equal checking every token alone.
  const std::string doc = R"({ "name": "Tom \"T\"", "age": 42, "tags": [ "é", "b"]})";
  size_t n_allowed_total = 0;
  for (size_t i = 0; i <= doc.size(); ++i) {
    std::vector<uint8_t> mask;
    m->fill_mask(*trie, &mask);
    ASSERT_EQ(mask.size(), static_cast<size_t>(tok->n_vocab()));
    for (int32_t id = 0; id < tok->n_vocab(); ++id) {
      const std::string& piece = trie->piece(id);
      const bool direct = !piece.empty() && !trie->is_end(id) && m->allows(piece);
      ASSERT_EQ(mask[static_cast<size_t>(id)] != 0, direct) << "prefix " << doc.substr(0, i) << " token " << id;
      n_allowed_total += direct ? 1 : 0;
    }
    if (i < doc.size()) {
      ASSERT_TRUE(m->advance(doc.substr(i, 1))) << doc.substr(0, i + 1);
    }
  }
  EXPECT_TRUE(m->accepting());
  EXPECT_GT(n_allowed_total, doc.size());  // the masks are not trivially empty
}

TEST(JsonSchema, RefusesWhatItCannotEnforce) {
  std::string gbnf;
  auto err = [&](const char* schema) {
    const Status s = json_schema_to_gbnf(schema, &gbnf);
    EXPECT_FALSE(s.ok()) << schema;
    return s.message();
  };
  EXPECT_NE(err(R"({"type":"string","pattern":"^a+$"})").find("'pattern' is not supported"), std::string::npos);
  EXPECT_NE(err(R"({"$ref":"#/$defs/missing"})").find("does not resolve"), std::string::npos);
  // A cycle that reads nothing on the way is refused at conversion; one through an array's items is fine.
  EXPECT_NE(err(R"({"$ref":"#"})").find("$ref cycle reaches itself"), std::string::npos);
  EXPECT_NE(err(R"({"anyOf":[{"$ref":"#"},{"type":"null"}]})").find("$ref cycle"), std::string::npos);
  std::string recursive;
  EXPECT_TRUE(
      json_schema_to_gbnf(R"({"anyOf":[{"type":"array","items":{"$ref":"#"}},{"type":"null"}]})", &recursive).ok());
  EXPECT_NE(err(R"({"type":"strin"})").find("unknown type 'strin'"), std::string::npos);
  EXPECT_NE(err(R"({"type":"object",)").find("not valid JSON"), std::string::npos);
  EXPECT_NE(err(R"({"type":"integer","minimum":5,"maximum":4})").find("no integer"), std::string::npos);
  EXPECT_NE(err(R"({"type":"object","required":["a"]})").find("'a' has no schema"), std::string::npos);
  EXPECT_NE(err(R"({"type":"string","format":"hostname"})").find("format 'hostname'"), std::string::npos);
  EXPECT_NE(err("false").find("admits no value"), std::string::npos);
  // A deep value (a const, an enum, a default) is refused at parse: its copies and dump() recursed per
  // level and overflowed the stack (a crash inside lmrt_json_schema_to_grammar).
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  for (const std::string& schema :
       {"{\"const\": " + deep + "}", "{\"enum\": [" + deep + "]}", "{\"type\":\"string\",\"default\": " + deep + "}"})
    EXPECT_NE(err(schema.c_str()).find("nests JSON deeper than 256 levels"), std::string::npos);
  std::string nested = "{}";  // 250 levels of arrays around an object still convert
  for (int i = 0; i < 249; ++i) nested = "[" + nested + "]";
  EXPECT_TRUE(json_schema_to_gbnf("{\"const\": " + nested + "}", &gbnf).ok());
}

TEST(JsonSchema, IntegerRangesAreExact) {
  // Every integer in a window around the bounds: accepted exactly when inside.
  for (auto [lo, hi] : {std::pair<int, int>{-250, 1234}, {0, 9}, {7, 7}, {-19, -3}, {95, 1005}}) {
    std::string gbnf;
    const std::string schema =
        R"({"type":"integer","minimum":)" + std::to_string(lo) + R"(,"maximum":)" + std::to_string(hi) + "}";
    ASSERT_TRUE(json_schema_to_gbnf(schema, &gbnf).ok());
    auto g = parse_ok(gbnf);
    for (int v = lo - 30; v <= hi + 30; ++v)
      EXPECT_EQ(full_match(g, std::to_string(v)), v >= lo && v <= hi) << schema << " value " << v;
    EXPECT_FALSE(full_match(g, "0" + std::to_string(std::max(lo, 1))));  // no leading zeros
  }
}

TEST(JsonSchema, OptionalPropertiesAreAnyOrderedSubset) {
  // No property required: any subset of the declared ones, in their order, each at most once.
  std::string gbnf;
  ASSERT_TRUE(json_schema_to_gbnf(R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"},
      "c":{"type":"integer"},"d":{"type":"integer"}},"additionalProperties":false})",
                                  &gbnf)
                  .ok());
  auto g = parse_ok(gbnf);
  for (int subset = 0; subset < 16; ++subset) {
    std::string doc = "{";
    for (int i = 0; i < 4; ++i)
      if ((subset >> i) & 1) doc += std::string(doc.size() > 1 ? ", " : "") + "\"" + "abcd"[i] + "\": 1";
    EXPECT_TRUE(full_match(g, doc + "}")) << doc;
  }
  EXPECT_FALSE(full_match(g, R"({"b": 1, "a": 1})"));
  EXPECT_FALSE(full_match(g, R"({"a": 1, "a": 1})"));
  EXPECT_FALSE(full_match(g, R"({"a": 1, "d": 1, "c": 1})"));
  EXPECT_FALSE(full_match(g, R"({"a": 1,})"));
  EXPECT_FALSE(full_match(g, R"({"e": 1})"));
  // Extra members after the declared ones, within maxProperties.
  ASSERT_TRUE(json_schema_to_gbnf(R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},
      "additionalProperties":true,"maxProperties":3})",
                                  &gbnf)
                  .ok());
  g = parse_ok(gbnf);
  EXPECT_TRUE(full_match(g, R"({"a": 1, "b": 1, "x": 1})"));
  EXPECT_TRUE(full_match(g, R"({"b": 1, "x": 1})"));
  EXPECT_TRUE(full_match(g, R"({"x": 1})"));
  EXPECT_FALSE(full_match(g, R"({"a": 1, "x": 1, "y": 1})"));
  EXPECT_FALSE(full_match(g, R"({"x": 1, "y": 1})"));
}

TEST(JsonSchema, ManyOptionalPropertiesGrowLinearly) {
  // Each alternative used to spell out every member after it: 20000 optional properties made 24 GB.
  auto schema = [](int n) {
    std::string s = R"({"type":"object","properties":{)";
    for (int i = 0; i < n; ++i) s += (i ? ",\"p" : "\"p") + std::to_string(i) + R"(":{"type":"string"})";
    return s + "}}";
  };
  // Sizes where the quadratic text still fits in memory (15 and 60 MB), so that it fails here.
  std::string small, large;
  ASSERT_TRUE(json_schema_to_gbnf(schema(1000), &small).ok());
  ASSERT_TRUE(json_schema_to_gbnf(schema(2000), &large).ok());
  ASSERT_LT(large.size(), small.size() * 5 / 2) << small.size() << " then " << large.size() << " bytes";
  // 20000: linear too (about 130 bytes a property), or refused as larger than the parser takes.
  std::string huge;
  const Status s = json_schema_to_gbnf(schema(20000), &huge);
  if (s.ok())
    EXPECT_LT(huge.size(), small.size() * 25);
  else
    EXPECT_NE(s.message().find("larger than"), std::string::npos) << s.message();
}

// --- constrained generation through the C API ---

struct Handles {
  lmrt_model* model = nullptr;
  lmrt_context* ctx = nullptr;
  ~Handles() {
    lmrt_context_free(ctx);
    lmrt_model_close(model);
  }
};

void open_story_model(Handles* h) {
  char err[512] = {0};
  ASSERT_EQ(lmrt_model_open(test::model_path("stories260K.gguf").c_str(), nullptr, &h->model, err, sizeof err), LMRT_OK)
      << err;
  lmrt_context_params p;
  lmrt_context_params_init(&p);
  p.n_ctx = 512;
  p.n_threads = 1;
  ASSERT_EQ(lmrt_context_create(h->model, &p, &h->ctx, err, sizeof err), LMRT_OK) << err;
}

TEST(GrammarGeneration, GreedyOutputFollowsGbnfAndEndsWhereComplete) {
  Handles h;
  open_story_model(&h);
  const std::string gbnf =
      "root ::= \"Once upon a time, \" name \" went to the \" place \".\"\n"
      "name ::= \"Lily\" | \"Tom\" | [A-Z] [a-z]{2,8}\nplace ::= \"park\" | \"store\" | [a-z]{3,10}\n";
  lmrt_generate_request req;
  lmrt_generate_request_init(&req);
  req.prompt = "Hello";
  req.max_tokens = 80;
  req.grammar = gbnf.c_str();
  lmrt_generate_result res;
  res.struct_size = sizeof res;
  ASSERT_EQ(lmrt_generate(h.ctx, &req, nullptr, nullptr, &res), LMRT_OK) << lmrt_context_last_error(h.ctx);
  const std::string text(res.text, res.text_len);
  EXPECT_EQ(res.finish_reason, LMRT_FINISH_EOS) << text;
  EXPECT_TRUE(full_match(parse_ok(gbnf), text)) << text;
  // Unconstrained, the same prompt does not give such a sentence.
  lmrt_generate_request free_req = req;
  free_req.grammar = nullptr;
  ASSERT_EQ(lmrt_generate(h.ctx, &free_req, nullptr, nullptr, &res), LMRT_OK);
  EXPECT_FALSE(full_match(parse_ok(gbnf), std::string(res.text, res.text_len)));
}

TEST(GrammarGeneration, JsonSchemaOutputParsesAndValidatesWithSampling) {
  Handles h;
  open_story_model(&h);
  const char* schema = R"({"type":"object","properties":{
      "name":{"type":"string","maxLength":16},"age":{"type":"integer","minimum":1,"maximum":99},
      "pets":{"type":"array","items":{"enum":["cat","dog"]},"minItems":1,"maxItems":3}},
      "required":["name","age","pets"],"additionalProperties":false})";
  // Sampled (seeded), and with the grammar placed after top_k: the per-candidate path.
  for (const char* chain : {"", "grammar temperature(0.9) dist", "top_k(40) grammar temperature(0.9) dist"}) {
    for (uint64_t seed : {1u, 2u, 3u}) {
      lmrt_generate_request req;
      lmrt_generate_request_init(&req);
      req.prompt = "Once upon a time";
      req.max_tokens = 200;
      req.json_schema = schema;
      req.samplers = chain;
      req.seed = seed;
      lmrt_generate_result res;
      res.struct_size = sizeof res;
      const lmrt_status s = lmrt_generate(h.ctx, &req, nullptr, nullptr, &res);
      const std::string last_error = lmrt_context_last_error(h.ctx);
      if (std::string(chain).rfind("top_k", 0) == 0 && s != LMRT_OK) {
        // top_k may leave no candidate the grammar allows: a clear error, never invalid output.
        EXPECT_NE(last_error.find("no candidate token can continue"), std::string::npos) << last_error;
        continue;
      }
      ASSERT_EQ(s, LMRT_OK) << chain << ": " << last_error;
      const std::string text(res.text, res.text_len);
      ASSERT_EQ(res.finish_reason, LMRT_FINISH_EOS) << chain << " seed " << seed << ": " << text;
      const nlohmann::json v = nlohmann::json::parse(text);  // throws (fails the test) when not JSON
      ASSERT_TRUE(v.is_object()) << text;
      EXPECT_EQ(v.size(), 3u) << text;
      ASSERT_TRUE(v["name"].is_string());
      EXPECT_LE(v["name"].get<std::string>().size(), 16u * 4);
      ASSERT_TRUE(v["age"].is_number_integer()) << text;
      EXPECT_GE(v["age"].get<int>(), 1);
      EXPECT_LE(v["age"].get<int>(), 99);
      ASSERT_TRUE(v["pets"].is_array());
      EXPECT_GE(v["pets"].size(), 1u);
      EXPECT_LE(v["pets"].size(), 3u);
      for (const auto& p : v["pets"]) EXPECT_TRUE(p == "cat" || p == "dog") << text;
    }
  }
}

TEST(GrammarGeneration, BadGrammarsAreClearErrors) {
  Handles h;
  open_story_model(&h);
  lmrt_generate_request req;
  lmrt_generate_request_init(&req);
  req.prompt = "Hi";
  req.max_tokens = 4;
  req.grammar = "root ::= \"a\" |\n  (\"b\"";
  lmrt_generate_result res;
  res.struct_size = sizeof res;
  EXPECT_EQ(lmrt_generate(h.ctx, &req, nullptr, nullptr, &res), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(lmrt_context_last_error(h.ctx)).find("gbnf 2:"), std::string::npos)
      << lmrt_context_last_error(h.ctx);
  req.grammar = nullptr;
  req.json_schema = R"({"type":"string","pattern":"x"})";
  EXPECT_EQ(lmrt_generate(h.ctx, &req, nullptr, nullptr, &res), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(lmrt_context_last_error(h.ctx)).find("pattern"), std::string::npos);
  req.grammar = "root ::= \"a\"";
  EXPECT_EQ(lmrt_generate(h.ctx, &req, nullptr, nullptr, &res), LMRT_ERR_INVALID_ARGUMENT);  // both
  req.json_schema = nullptr;
  req.samplers = "grammar grammar";
  EXPECT_EQ(lmrt_generate(h.ctx, &req, nullptr, nullptr, &res), LMRT_OK);  // placed twice: both apply
  EXPECT_EQ(std::string(res.text, res.text_len), "a");
  req.grammar = nullptr;
  req.samplers = "grammar top_k(3)";
  EXPECT_EQ(lmrt_generate(h.ctx, &req, nullptr, nullptr, &res), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(lmrt_context_last_error(h.ctx)).find("gives no grammar"), std::string::npos);
  req.samplers = nullptr;
  req.grammar = "root ::= \"a\"";
  req.n_beams = 2;
  EXPECT_EQ(lmrt_generate(h.ctx, &req, nullptr, nullptr, &res), LMRT_ERR_INVALID_ARGUMENT);
}

TEST(GrammarCheck, RefusesWhatAGenerationWouldRefuseWithoutAModel) {
  char err[256] = "";
  EXPECT_EQ(lmrt_grammar_check("root ::= \"a\" [0-9]*", err, sizeof err), LMRT_OK) << err;
  EXPECT_EQ(lmrt_grammar_check("root ::= \"a\" |\n  (\"b\"", err, sizeof err), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err).find("gbnf 2:"), std::string::npos) << err;
  EXPECT_EQ(lmrt_grammar_check("root ::= root \"a\"", err, sizeof err), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(lmrt_grammar_check(nullptr, nullptr, 0), LMRT_ERR_INVALID_ARGUMENT);
  // Parses, but the root expands too deep: the matcher (built before the vocabulary is used) refuses it.
  std::string chain = "root ::= r0\n";
  for (int i = 0; i < 5000; ++i)
    chain.append("r").append(std::to_string(i)).append(" ::= r").append(std::to_string(i + 1)).append("\n");
  chain += "r5000 ::= \"a\"\n";
  EXPECT_EQ(lmrt_grammar_check(chain.c_str(), err, sizeof err), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err).find("grammar"), std::string::npos) << err;
}

}  // namespace
}  // namespace lmrt
