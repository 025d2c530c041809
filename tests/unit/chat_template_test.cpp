// Chat templates: Jinja2 semantics the comparison corpus (tests/chat) may not reach, errors that
// name the line and construct, bounds against hostile templates, and lmrt_chat_apply_template
// (buffers, the model's own template and named variant, special tokens from the vocabulary).
// Expected texts are what python3-jinja2 3.1 renders for the same template and variables.
#include "runtime/chat/chat_template.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "lmrt/lmrt.h"
#include "runtime/chat/jinja_interpreter.h"
#include "runtime/chat/jinja_parser.h"
#include "runtime/model/gguf_file.h"
#include "test_support.h"
#include "tools/gguf_writer.h"

namespace lmrt {
namespace {

// Renders `tmpl` over messages_json (and extra variables) as apply_chat_template does.
Status render(const std::string& tmpl, std::string* out, const std::string& extra = "",
              const std::string& messages = R"([{"role":"user","content":"Hi"}])") {
  ChatTemplateRequest r;
  r.template_text = tmpl;
  r.messages_json = messages;
  r.extra_json = extra;
  r.add_generation_prompt = true;
  return render_chat_template(r, out);
}

std::string ok(const std::string& tmpl, const std::string& extra = "") {
  std::string out;
  Status s = render(tmpl, &out, extra);
  EXPECT_TRUE(s.ok()) << s.message() << "\n template: " << tmpl;
  return out;
}

std::string error_of(const std::string& tmpl, const std::string& extra = "") {
  std::string out;
  Status s = render(tmpl, &out, extra);
  EXPECT_FALSE(s.ok()) << "rendered: " << out;
  return s.message();
}

TEST(ChatTemplate, TrimBlocksAndLstripBlocksAsTransformersRenders) {
  EXPECT_EQ(ok("{% if true %}\n  x\n{% endif %}\ny"), "  x\ny");
  EXPECT_EQ(ok("a\n    {% if true %}\nb\n    {% endif %}\nc\n"), "a\nb\nc");  // one trailing newline dropped
  EXPECT_EQ(ok("a  {%- if true -%}  b  {%- endif %}"), "ab");
  EXPECT_EQ(ok("a\n  {%+ if true %}b{% endif %}"), "a\n  b");
  EXPECT_EQ(ok("{{ 'x' }}\n{{ 'y' }}"), "x\ny");  // no trimming after expressions
  EXPECT_EQ(ok("  {# note #}\nz"), "z");
  EXPECT_EQ(ok("{% raw %}{{ not_evaluated }}{% endraw %}"), "{{ not_evaluated }}");
}

TEST(ChatTemplate, LoopVariablesFiltersElseAndControls) {
  EXPECT_EQ(ok("{% for x in [3,4,5] %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.first }}"
               "{{ loop.last }}{{ loop.length }}|{% endfor %}"),
            "103TrueFalse3|212FalseFalse3|321FalseTrue3|");
  EXPECT_EQ(ok("{% for x in range(6) if x is odd %}{{ x }}{{ loop.cycle('a','b') }}{% endfor %}"), "1a3b5a");
  EXPECT_EQ(ok("{% for x in [] %}x{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(ok("{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 4 %}{% break %}"
               "{% endif %}{{ x }}{% endfor %}"),
            "013");
  EXPECT_EQ(ok("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }};{% endfor %}"), "a=1;b=2;");
}

TEST(ChatTemplate, ScopingNamespacesAndMacros) {
  // A set inside a loop does not leak out (nor into the next iteration); a namespace does.
  EXPECT_EQ(ok("{% set x = 1 %}{% set ns = namespace(n=0) %}{% for i in range(3) %}{% set x = i %}"
               "{% set ns.n = ns.n + i %}{% endfor %}{{ x }} {{ ns.n }}"),
            "1 3");
  EXPECT_EQ(ok("{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}"
               "{{ greet('A') }} {{ greet('B', punct='?') }}"),
            "Hi A! Hi B?");
  EXPECT_EQ(ok("{% macro box() %}[{{ caller() }}]{% endmacro %}{% call box() %}inside{% endcall %}"), "[inside]");
  EXPECT_EQ(ok("{% set block %}some {{ 'text' }}{% endset %}{{ block | upper }}"), "SOME TEXT");
}

TEST(ChatTemplate, ExpressionsStringsAndSlices) {
  EXPECT_EQ(ok("{{ 'abc'[::-1] }} {{ [1,2,3][1:] }} {{ 'héllo'[1:3] }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % -3 }}"
               " {{ 2 ** 10 }} {{ 1 / 4 }} {{ 'a' ~ 1 ~ none }}"),
            "cba [2, 3] él 3 -4 -2 1024 0.25 a1None");
  EXPECT_EQ(ok("{{ '  x y  '.strip() }}|{{ 'a,b,,c'.split(',') }}|{{ 'Hello'.startswith('He') }}|"
               "{{ 'x'.upper() ~ 'Y'.lower() }}|{{ 'hi there'.title() }}|{{ 'aXa'.replace('a', 'b') }}"),
            "x y|['a', 'b', '', 'c']|True|Xy|Hi There|bXb");
  EXPECT_EQ(ok("{{ 'yes' if messages[0].role == 'user' else 'no' }} {{ messages[0]['content'] is string }}"
               " {{ messages | length }} {{ messages[5] is defined }} {{ 'Hi' in messages[0].content }}"),
            "yes True 1 False True");
  EXPECT_EQ(ok("{{ {'b': 1, 'a': [1.0, 'x', true, none]} }}"), "{'b': 1, 'a': [1.0, 'x', True, None]}");
}

TEST(ChatTemplate, FiltersAndTests) {
  EXPECT_EQ(ok("{{ [3,1,2] | sort | join(',') }} {{ ['a','B','a'] | unique | list }} {{ [1,2,3] | first }}"
               "{{ [1,2,3] | last }} {{ none | default('d') }}{{ undefined_name | default('u') }}"),
            "1,2,3 ['a', 'B'] 13 Noneu");
  EXPECT_EQ(ok("{{ messages | selectattr('role', 'equalto', 'user') | map(attribute='content') | join }}"
               " {{ [1,2,3,4] | select('even') | list }} {{ [1,2,3] | reject('odd') | list }}"),
            "Hi [2, 4] [2]");
  EXPECT_EQ(ok("{{ 'a\nb\n\nc' | indent(2) }}|{{ '3' | int + 1 }}|{{ 2.5 | round }}|{{ -3 | abs }}"),
            "a\n  b\n\n  c|4|2.0|3");
  EXPECT_EQ(ok("{{ 12 is divisibleby 4 }}{{ 3 is even }}{{ none is none }}{{ {} is mapping }}{{ 1 is number }}"
               "{{ true is boolean }}{{ 'x' is in 'xyz' }}"),
            "TrueFalseTrueTrueTrueTrueTrue");
  // transformers' tojson: ensure_ascii off, indent and separators as json.dumps takes them.
  EXPECT_EQ(ok("{{ {'k': 'é\"\n', 'n': [1, 2.5, none, true]} | tojson }}"),
            "{\"k\": \"é\\\"\\n\", \"n\": [1, 2.5, null, true]}");
  EXPECT_EQ(ok("{{ {'a': [1, {}], 'b': []} | tojson(indent=2) }}"),
            "{\n  \"a\": [\n    1,\n    {}\n  ],\n  \"b\": []\n}");
  EXPECT_EQ(ok("{{ {'b': 1, 'a': 2} | tojson(separators=(',', ':'), sort_keys=true) }}"), "{\"a\":2,\"b\":1}");
  EXPECT_EQ(ok("{{ 'é' | tojson(ensure_ascii=true) }}{{ 'x' | safe + '<' }}{{ '<a>' | e }}"),
            "\"\\u00e9\"x&lt;&lt;a&gt;");
}

TEST(ChatTemplate, UndefinedBehavesLikeJinja2Default) {
  EXPECT_EQ(ok("[{{ missing }}]{% if missing %}x{% endif %}{% for m in missing %}y{% endfor %}{{ missing | length }}"
               "{{ messages[0].nope is defined }}"),
            "[]0False");
  EXPECT_NE(error_of("{{ missing.attr }}").find("'missing' is undefined"), std::string::npos);
  EXPECT_NE(error_of("{{ missing + 1 }}").find("'missing' is undefined"), std::string::npos);
}

TEST(ChatTemplate, ErrorsNameTheLineAndConstruct) {
  std::string m = error_of("line one\n{{ x | no_such_filter }}");
  EXPECT_NE(m.find("line 2"), std::string::npos) << m;
  EXPECT_NE(m.find("unknown filter 'no_such_filter'"), std::string::npos) << m;
  m = error_of("a\nb\n{% if true %}never closed");
  EXPECT_NE(m.find("unexpected end of template, expected 'elif' or 'else' or 'endif'"), std::string::npos) << m;
  m = error_of("\n{% frobnicate %}");
  EXPECT_NE(m.find("line 2: unknown statement 'frobnicate'"), std::string::npos) << m;
  m = error_of("{{ 'unterminated }}");
  EXPECT_NE(m.find("unclosed string literal"), std::string::npos) << m;
  // The template's own raise_exception comes back unchanged, marked as such.
  std::string out;
  Status s = render("{{ raise_exception('Conversation roles must alternate') }}", &out);
  EXPECT_EQ(s.code(), Code::bad_format);
  EXPECT_EQ(s.message(), "raise_exception: Conversation roles must alternate");
  s = render("{{ 1 }}", &out, "", "{\"not\": \"a list\"}");
  EXPECT_EQ(s.code(), Code::invalid_argument);
  s = render("{{ 1 }}", &out, "", "[{\"role\": ");
  EXPECT_EQ(s.code(), Code::invalid_argument);
  EXPECT_NE(s.message().find("messages is not valid JSON"), std::string::npos) << s.message();
}

TEST(ChatTemplate, HostileTemplatesFailCleanly) {
  // Nesting deeper than the parser allows, unbounded recursion, output and work bombs: each is an
  // error, never a crash or a hang.
  EXPECT_NE(error_of("{{ " + std::string(100000, '(') + "1" + std::string(100000, ')') + " }}").find("nesting"),
            std::string::npos);
  std::string chain = "{{ 1";
  for (int i = 0; i < 100000; ++i) chain += " ~ 1";
  EXPECT_NE(error_of(chain + " }}").find("expression nested deeper"), std::string::npos);
  EXPECT_NE(error_of("{{ x" + std::string(50000, '|') + " }}").find("expected a name"), std::string::npos);
  std::string filters = "{{ 'x'";
  for (int i = 0; i < 100000; ++i) filters += "|trim";
  EXPECT_NE(error_of(filters + " }}").find("expression nested deeper"), std::string::npos);
  EXPECT_NE(error_of("{{ [1].99999999999999999999999 }}").find("index out of range"), std::string::npos);
  EXPECT_NE(error_of("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}").find("nested deeper"),
            std::string::npos);
  EXPECT_NE(error_of("{% for i in range(100000) %}{{ 'x' * 100000 }}{% endfor %}").find("output exceeds"),
            std::string::npos);
  EXPECT_NE(error_of("{{ range(100000000) }}").find("range too big"), std::string::npos);
  jinja::RenderLimits limits;
  limits.max_steps = 100000;
  jinja::Interpreter interpreter(limits);
  const jinja::Body body =
      jinja::parse_template("{% for i in range(1000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}");
  try {
    interpreter.render(body, jinja::Dict{});
    ADD_FAILURE() << "the step limit did not stop the loops";
  } catch (const jinja::JinjaError& e) {
    EXPECT_NE(std::string(e.what()).find("evaluation steps"), std::string::npos) << e.what();
  }
  // Values: nesting bounded (from JSON and built by a loop), and no namespace cycles.
  std::string out;
  const std::string deep_json = std::string(100000, '[') + std::string(100000, ']');
  Status deep = render("{{ messages }}", &out, "", deep_json);
  EXPECT_FALSE(deep.ok());
  EXPECT_NE(deep.message().find("messages nests JSON deeper than 256 levels"), std::string::npos) << deep.message();
  EXPECT_NE(error_of("{% set ns = namespace(l=[]) %}{% for i in range(100000) %}{% set ns.l = [ns.l] %}{% endfor %}")
                .find("value nested deeper"),
            std::string::npos);
  EXPECT_NE(error_of("{% set ns = namespace() %}{% set ns.me = [ns] %}{{ ns }}").find("namespace may not hold"),
            std::string::npos);
  // Garbage bytes never crash the lexer or parser.
  std::string junk;
  for (int i = 0; i < 4000; ++i) junk += static_cast<char>("{%}#-+ 'x\"\n("[i * 7919 % 13]);
  (void)render(junk, &out);
}

// ---- the C ABI ----

// stories260K with a chat template (and a named variant) added to its metadata.
std::string model_with_template() {
  static const std::string path = [] {
    std::unique_ptr<GgufFile> src;
    EXPECT_TRUE(GgufFile::open(test::model_path("stories260K.gguf"), true, &src).ok());
    GgufWriter w;
    for (const GgufKv& kv : src->metadata()) w.add_value(std::string(kv.key), kv.value);
    w.add_string("tokenizer.chat_template",
                 "{{ bos_token }}{% for m in messages %}[{{ m.role }}] {{ m.content }}{{ eos_token }}{% endfor %}"
                 "{% if add_generation_prompt %}[assistant]{% endif %}");
    w.add_string("tokenizer.chat_template.tool_use", "{{ tools | map(attribute='function.name') | join(',') }}");
    for (const GgufTensorInfo& t : src->tensors()) {
      std::vector<uint64_t> ne(t.ne.begin(), t.ne.begin() + t.n_dims);
      EXPECT_TRUE(w.add_tensor(std::string(t.name), ne, t.type).ok());
    }
    const std::string out = ::testing::TempDir() + "/stories260K-chat.gguf";
    Status s = w.write(out, [&](size_t i, uint8_t* data, uint64_t bytes) {
      std::memcpy(data, src->tensors()[i].data, bytes);
      return Status::Ok();
    });
    EXPECT_TRUE(s.ok()) << s.message();
    return out;
  }();
  return path;
}

TEST(ChatTemplateApi, RendersTheModelsTemplateWithItsSpecialTokens) {
  lmrt_model* model = nullptr;
  char err[256];
  ASSERT_EQ(lmrt_model_open(model_with_template().c_str(), nullptr, &model, err, sizeof err), LMRT_OK) << err;
  const char* messages = R"([{"role":"user","content":"Hi"},{"role":"assistant","content":"Yo"}])";
  size_t len = 0;
  ASSERT_EQ(lmrt_chat_apply_template(model, messages, nullptr, nullptr, 0, &len, err, sizeof err),
            LMRT_ERR_BUFFER_TOO_SMALL);
  const std::string want = "<s>[user] Hi</s>[assistant] Yo</s>[assistant]";
  EXPECT_EQ(len, want.size());
  std::string buf(len + 1, '\0');
  ASSERT_EQ(lmrt_chat_apply_template(model, messages, nullptr, buf.data(), buf.size(), &len, err, sizeof err), LMRT_OK)
      << err;
  EXPECT_EQ(std::string(buf.c_str()), want);

  lmrt_chat_template_params p;
  ASSERT_EQ(lmrt_chat_template_params_init(&p), LMRT_OK);
  EXPECT_EQ(p.add_generation_prompt, 1u);
  p.add_generation_prompt = 0;
  p.bos_token = "";
  p.extra_json = R"({"eos_token": "|"})";
  char small[128];
  ASSERT_EQ(lmrt_chat_apply_template(model, messages, &p, small, sizeof small, &len, err, sizeof err), LMRT_OK) << err;
  EXPECT_STREQ(small, "[user] Hi|[assistant] Yo|");

  p.template_name = "tool_use";
  p.tools_json = R"([{"type":"function","function":{"name":"a"}},{"type":"function","function":{"name":"b"}}])";
  ASSERT_EQ(lmrt_chat_apply_template(model, messages, &p, small, sizeof small, &len, err, sizeof err), LMRT_OK) << err;
  EXPECT_STREQ(small, "a,b");

  p.template_name = "nonexistent";
  EXPECT_EQ(lmrt_chat_apply_template(model, messages, &p, small, sizeof small, &len, err, sizeof err),
            LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err).find("tokenizer.chat_template.nonexistent"), std::string::npos) << err;
  lmrt_model_close(model);
}

TEST(ChatTemplateApi, ReportsBadArgumentsAndMissingTemplates) {
  char err[256];
  size_t len = 0;
  char buf[64];
  EXPECT_EQ(lmrt_chat_apply_template(nullptr, "[]", nullptr, buf, sizeof buf, &len, err, sizeof err),
            LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err).find("template_text"), std::string::npos) << err;
  lmrt_chat_template_params p;
  lmrt_chat_template_params_init(&p);
  p.template_text = "{{ messages | length }}";
  EXPECT_EQ(lmrt_chat_apply_template(nullptr, nullptr, &p, buf, sizeof buf, &len, err, sizeof err),
            LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(lmrt_chat_apply_template(nullptr, "[1,2]", &p, buf, sizeof buf, nullptr, err, sizeof err),
            LMRT_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(lmrt_chat_apply_template(nullptr, "[1,2]", &p, buf, sizeof buf, &len, err, sizeof err), LMRT_OK);
  EXPECT_STREQ(buf, "2");
  p.template_text = "{% for %}";
  EXPECT_EQ(lmrt_chat_apply_template(nullptr, "[]", &p, buf, sizeof buf, &len, err, sizeof err), LMRT_ERR_BAD_FORMAT);
  EXPECT_NE(std::string(err).find("line 1"), std::string::npos) << err;
  p.struct_size = 3;
  EXPECT_EQ(lmrt_chat_apply_template(nullptr, "[]", &p, buf, sizeof buf, &len, err, sizeof err),
            LMRT_ERR_INVALID_ARGUMENT);

  lmrt_model* model = nullptr;
  ASSERT_EQ(lmrt_model_open(test::model_path("stories260K.gguf").c_str(), nullptr, &model, err, sizeof err), LMRT_OK);
  EXPECT_EQ(lmrt_chat_apply_template(model, "[]", nullptr, buf, sizeof buf, &len, err, sizeof err),
            LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err).find("no chat template (GGUF key tokenizer.chat_template)"), std::string::npos) << err;
  lmrt_model_close(model);
}

}  // namespace
}  // namespace lmrt
