// JSON Schema to GBNF: one rule per schema node reached, named after its path; $ref targets get a
// rule each, so recursive schemas become recursive rules.
#include "runtime/grammar/json_schema.h"

#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "runtime/grammar/gbnf_parser.h"
#include "runtime/util/bounded_json.h"

namespace lmrt {
namespace {

using Json = nlohmann::ordered_json;

constexpr int64_t kMaxDigits = 15;              // integers are at most 15 digits
constexpr int64_t kIntLimit = 999999999999999;  // so every value is in [-kIntLimit, kIntLimit]
constexpr uint32_t kMaxCount = 1000;            // repetition bound of the GBNF parser
constexpr int kMaxSchemaDepth = 64;

// The primitives, written once and added only when used.
const std::map<std::string, std::string>& primitives() {
  static const std::map<std::string, std::string> p = {
      {"ws", R"(" "?)"},
      {"json-char", R"([^"\\\x00-\x1F\x7F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}))"},
      {"json-string", R"("\"" json-char* "\"")"},
      {"json-int", R"("-"? ("0" | [1-9] [0-9]{0,14}))"},
      {"json-number", R"(json-int ("." [0-9]{1,15})? ([eE] [-+]? [0-9]{1,3})?)"},
      {"json-boolean", R"("true" | "false")"},
      {"json-null", R"("null")"},
      {"json-value", R"(json-object | json-array | json-string | json-number | json-boolean | json-null)"},
      {"json-object", R"("{" ws (json-string ":" ws json-value ("," ws json-string ":" ws json-value)*)? "}")"},
      {"json-array", R"("[" ws (json-value ("," ws json-value)*)? "]")"},
      {"json-date", R"([0-9]{4} "-" ("0" [1-9] | "1" [0-2]) "-" ("0" [1-9] | [12] [0-9] | "3" [01]))"},
      {"json-time",
       R"(([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ("." [0-9]{1,6})? ("Z" | [+-] ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9]))"},
      {"json-date-time", R"(json-date "T" json-time)"},
      {"json-uuid", R"([0-9a-f]{8} "-" [0-9a-f]{4} "-" [0-9a-f]{4} "-" [0-9a-f]{4} "-" [0-9a-f]{12})"},
      {"json-email",
       R"([a-zA-Z0-9._+-]{1,32} "@" [a-zA-Z0-9] [a-zA-Z0-9-]{0,30} ("." [a-zA-Z0-9-]{1,16}){0,2} "." [a-zA-Z]{2,8})"},
  };
  return p;
}

// Which primitives each primitive uses.
const std::map<std::string, std::vector<std::string>>& primitive_deps() {
  static const std::map<std::string, std::vector<std::string>> d = {
      {"json-string", {"json-char"}},
      {"json-number", {"json-int"}},
      {"json-value", {"json-object", "json-array", "json-string", "json-number", "json-boolean", "json-null"}},
      {"json-object", {"ws", "json-string", "json-value"}},
      {"json-array", {"ws", "json-value"}},
      {"json-date-time", {"json-date", "json-time"}},
  };
  return d;
}

// A GBNF string literal of arbitrary bytes (UTF-8 passes through; quotes, backslashes and control
// characters are escaped).
std::string literal(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20 || c == 0x7F) {
      static const char* hex = "0123456789ABCDEF";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

std::string digits_class(char lo, char hi) {
  if (lo == hi) return std::string("\"") + lo + "\"";
  return std::string("[") + lo + "-" + hi + "]";
}

// Decimal strings of the same length n of every number in [lo, hi] (lo, hi given as n digits).
std::string same_length_range(const std::string& lo, const std::string& hi) {
  if (lo.size() == 1) return digits_class(lo[0], hi[0]);
  // A full span is one class: without this the two outer branches would each recurse on it.
  if (lo.find_first_not_of('0') == std::string::npos && hi.find_first_not_of('9') == std::string::npos)
    return "[0-9]{" + std::to_string(lo.size()) + "}";
  const std::string rest_lo = lo.substr(1), rest_hi = hi.substr(1);
  if (lo[0] == hi[0]) return digits_class(lo[0], lo[0]) + " (" + same_length_range(rest_lo, rest_hi) + ")";
  const std::string nines(rest_lo.size(), '9'), zeros(rest_lo.size(), '0');
  std::vector<std::string> alts;
  alts.push_back(digits_class(lo[0], lo[0]) + " (" + same_length_range(rest_lo, nines) + ")");
  if (hi[0] - lo[0] > 1)
    alts.push_back(digits_class(static_cast<char>(lo[0] + 1), static_cast<char>(hi[0] - 1)) + " [0-9]{" +
                   std::to_string(rest_lo.size()) + "}");
  alts.push_back(digits_class(hi[0], hi[0]) + " (" + same_length_range(zeros, rest_hi) + ")");
  std::string out;
  for (const std::string& a : alts) out += (out.empty() ? "" : " | ") + a;
  return out;
}

// Decimal strings (no leading zeros) of every integer in [lo, hi], 0 <= lo <= hi <= kIntLimit.
std::string unsigned_range(int64_t lo, int64_t hi) {
  std::vector<std::string> alts;
  for (int64_t len = 1, first = 0, last = 9; len <= kMaxDigits && first <= hi; ++len) {
    const int64_t a = std::max(lo, first), b = std::min(hi, last);
    if (a <= b) {
      std::string sa = std::to_string(a), sb = std::to_string(b);
      alts.push_back("(" + same_length_range(sa, sb) + ")");
    }
    first = last + 1;
    last = last * 10 + 9;
  }
  std::string out;
  for (const std::string& a : alts) out += (out.empty() ? "" : " | ") + a;
  return out;
}

// Every integer in [lo, hi] (within +-kIntLimit).
std::string int_range(int64_t lo, int64_t hi) {
  std::vector<std::string> alts;
  if (lo < 0) alts.push_back("\"-\" (" + unsigned_range(std::max<int64_t>(1, -std::min<int64_t>(hi, -1)), -lo) + ")");
  if (hi >= 0) alts.push_back(unsigned_range(std::max<int64_t>(lo, 0), hi));
  std::string out;
  for (const std::string& a : alts) out += (out.empty() ? "" : " | ") + a;
  return out;
}

class SchemaTranslator {
 public:
  explicit SchemaTranslator(const Json& root) : root_(root) { reserved_.insert("root"); }

  Status translate(std::string* gbnf) {
    std::string body;
    LMRT_RETURN_IF_ERROR(visit(root_, "root", "#", 0, &body));
    rules_["root"] = body;
    // Emit the $ref targets that were reached (they may reach more).
    while (!pending_refs_.empty()) {
      const std::string ref = *pending_refs_.begin();
      pending_refs_.erase(pending_refs_.begin());
      const Json* target = nullptr;
      LMRT_RETURN_IF_ERROR(resolve(ref, &target));
      std::string ref_body;
      LMRT_RETURN_IF_ERROR(visit(*target, ref_rules_[ref], ref, 0, &ref_body));
      rules_[ref_rules_[ref]] = ref_body;
    }
    std::set<std::string> all;
    std::vector<std::string> todo(used_.begin(), used_.end());
    while (!todo.empty()) {
      const std::string p = todo.back();
      todo.pop_back();
      if (!all.insert(p).second) continue;
      auto d = primitive_deps().find(p);
      if (d != primitive_deps().end()) todo.insert(todo.end(), d->second.begin(), d->second.end());
    }
    std::string out = "root ::= " + rules_["root"] + "\n";
    for (const auto& [name, rule_body] : rules_)
      if (name != "root") out += name + " ::= " + rule_body + "\n";
    for (const std::string& p : all) out += p + " ::= " + primitives().at(p) + "\n";
    if (out.size() > kMaxGrammarText)
      return fail("#", "the grammar would be larger than " + std::to_string(kMaxGrammarText >> 20) + " MB");
    *gbnf = std::move(out);
    return Status::Ok();
  }

 private:
  static Status fail(const std::string& path, const std::string& what) {
    return Error(Code::invalid_argument, "json schema at " + path + ": " + what);
  }

  std::string use(const std::string& primitive) {
    used_.insert(primitive);
    return primitive;
  }

  // A new rule name from a path hint: letters, digits and '-' only, made unique.
  std::string rule_name(const std::string& hint) {
    std::string base;
    for (char c : hint) base += (std::isalnum(static_cast<unsigned char>(c)) != 0) ? c : '-';
    if (base.empty()) base = "r";
    std::string name = base;
    for (int i = 2; rules_.count(name) != 0 || reserved_.count(name) != 0 || primitives().count(name) != 0; ++i)
      name = base + "-" + std::to_string(i);
    reserved_.insert(name);
    return name;
  }

  // Puts `body` in a rule of its own and returns the rule's name.
  std::string as_rule(const std::string& hint, const std::string& body) {
    const std::string name = rule_name(hint);
    rules_[name] = body;
    rule_bytes_ += name.size() + body.size() + 6;
    return name;
  }

  // The GBNF parser refuses more than kMaxGrammarText bytes: stop as soon as the rules made so far
  // pass that, instead of building a grammar that will be refused anyway.
  Status check_size(const std::string& path) const {
    if (rule_bytes_ <= kMaxGrammarText) return Status::Ok();
    return fail(path, "the grammar would be larger than " + std::to_string(kMaxGrammarText >> 20) + " MB");
  }

  Status resolve(const std::string& ref, const Json** out) const {
    if (ref.rfind("#", 0) != 0) return fail(ref, "only local $ref (\"#/...\") is supported");
    try {
      const std::string pointer = ref.substr(1);
      const Json& target = pointer.empty() ? root_ : root_.at(Json::json_pointer(pointer));
      *out = &target;
    } catch (const std::exception&) {
      return fail(ref, "$ref does not resolve");
    }
    return Status::Ok();
  }

  Status visit(const Json& s, const std::string& hint, const std::string& path, int depth, std::string* out) {
    if (depth > kMaxSchemaDepth) return fail(path, "schema nested deeper than " + std::to_string(kMaxSchemaDepth));
    LMRT_RETURN_IF_ERROR(check_size(path));
    if (s.is_boolean()) {
      if (!s.get<bool>()) return fail(path, "the schema 'false' admits no value");
      *out = use("json-value");
      return Status::Ok();
    }
    if (!s.is_object()) return fail(path, "a schema must be an object or a boolean");
    for (const char* k : {"pattern", "not", "if", "then", "else", "patternProperties", "dependentRequired",
                          "dependentSchemas", "propertyNames", "contains", "uniqueItems", "multipleOf", "minProperties",
                          "unevaluatedProperties", "unevaluatedItems"}) {
      if (s.contains(k) && !(std::string(k) == "uniqueItems" && s[k] == false))
        return fail(path, std::string("'") + k + "' is not supported");
    }
    if (s.contains("$ref")) {
      if (!s["$ref"].is_string()) return fail(path, "$ref must be a string");
      const std::string ref = s["$ref"].get<std::string>();
      const Json* target = nullptr;
      LMRT_RETURN_IF_ERROR(resolve(ref, &target));
      auto it = ref_rules_.find(ref);
      if (it == ref_rules_.end()) {
        const size_t slash = ref.find_last_of('/');
        it = ref_rules_.emplace(ref, rule_name("ref-" + ref.substr(slash == std::string::npos ? 0 : slash + 1))).first;
        pending_refs_.insert(ref);
      }
      *out = it->second;
      return Status::Ok();
    }
    if (s.contains("const")) {
      *out = literal(s["const"].dump());
      return Status::Ok();
    }
    if (s.contains("enum")) {
      if (!s["enum"].is_array() || s["enum"].empty()) return fail(path, "enum must be a non-empty array");
      std::string alts;
      for (const Json& v : s["enum"]) alts += (alts.empty() ? "" : " | ") + literal(v.dump());
      *out = "(" + alts + ")";
      return Status::Ok();
    }
    for (const char* k : {"anyOf", "oneOf"}) {
      if (!s.contains(k)) continue;
      if (!s[k].is_array() || s[k].empty()) return fail(path, std::string(k) + " must be a non-empty array");
      std::string alts;
      for (size_t i = 0; i < s[k].size(); ++i) {
        std::string alt;
        LMRT_RETURN_IF_ERROR(
            visit(s[k][i], hint + "-" + std::to_string(i), path + "/" + k + "/" + std::to_string(i), depth + 1, &alt));
        alts += (alts.empty() ? "" : " | ") + alt;
      }
      *out = as_rule(hint, alts);
      return Status::Ok();
    }
    if (s.contains("allOf")) {
      if (!s["allOf"].is_array() || s["allOf"].size() != 1)
        return fail(path, "allOf is supported with exactly one member");
      return visit(s["allOf"][0], hint, path + "/allOf/0", depth + 1, out);
    }
    if (!s.contains("type")) {
      if (s.contains("properties")) return visit_object(s, hint, path, depth, out);
      if (s.contains("items") || s.contains("prefixItems")) return visit_array(s, hint, path, depth, out);
      *out = use("json-value");
      return Status::Ok();
    }
    const Json& type = s["type"];
    if (type.is_array()) {
      std::string alts;
      for (const Json& t : type) {
        if (!t.is_string()) return fail(path, "type entries must be strings");
        std::string alt;
        LMRT_RETURN_IF_ERROR(visit_type(s, t.get<std::string>(), hint + "-" + t.get<std::string>(), path, depth, &alt));
        alts += (alts.empty() ? "" : " | ") + alt;
      }
      if (alts.empty()) return fail(path, "type is an empty list");
      *out = "(" + alts + ")";
      return Status::Ok();
    }
    if (!type.is_string()) return fail(path, "type must be a string or a list of strings");
    return visit_type(s, type.get<std::string>(), hint, path, depth, out);
  }

  Status visit_type(const Json& s, const std::string& type, const std::string& hint, const std::string& path, int depth,
                    std::string* out) {
    if (type == "object") return visit_object(s, hint, path, depth, out);
    if (type == "array") return visit_array(s, hint, path, depth, out);
    if (type == "string") return visit_string(s, hint, path, out);
    if (type == "integer" || type == "number") return visit_number(s, type == "integer", hint, path, out);
    if (type == "boolean") {
      *out = use("json-boolean");
      return Status::Ok();
    }
    if (type == "null") {
      *out = use("json-null");
      return Status::Ok();
    }
    return fail(path, "unknown type '" + type + "'");
  }

  static Status count(const Json& s, const char* key, const std::string& path, int64_t fallback, int64_t* out) {
    *out = fallback;
    if (!s.contains(key)) return Status::Ok();
    if (!s[key].is_number_integer() || s[key].get<int64_t>() < 0)
      return fail(path, std::string(key) + " must be a non-negative integer");
    *out = s[key].get<int64_t>();
    return Status::Ok();
  }

  // `item` repeated min..max times (max < 0: no limit), as GBNF.
  static std::string repeated(const std::string& item, int64_t min, int64_t max) {
    if (max < 0 || max > kMaxCount) return "(" + item + "){" + std::to_string(min) + ",}";
    return "(" + item + "){" + std::to_string(min) + "," + std::to_string(max) + "}";
  }

  Status visit_string(const Json& s, const std::string& hint, const std::string& path, std::string* out) {
    if (s.contains("format")) {
      if (!s["format"].is_string()) return fail(path, "format must be a string");
      const std::string f = s["format"].get<std::string>();
      if (f == "date" || f == "time" || f == "date-time" || f == "uuid" || f == "email") {
        *out = "\"\\\"\" " + use("json-" + f) + " \"\\\"\"";
        return Status::Ok();
      }
      return fail(path, "string format '" + f + "' is not supported");
    }
    int64_t min = 0, max = -1;
    LMRT_RETURN_IF_ERROR(count(s, "minLength", path, 0, &min));
    LMRT_RETURN_IF_ERROR(count(s, "maxLength", path, -1, &max));
    if (max >= 0 && max < min) return fail(path, "maxLength is below minLength");
    if (min > kMaxCount) return fail(path, "minLength above " + std::to_string(kMaxCount) + " is not supported");
    if (min == 0 && max < 0) {
      *out = use("json-string");
      return Status::Ok();
    }
    *out = as_rule(hint, "\"\\\"\" " + repeated(use("json-char"), min, max) + " \"\\\"\"");
    return Status::Ok();
  }

  Status visit_number(const Json& s, bool integer, const std::string& hint, const std::string& path, std::string* out) {
    const bool bounded = s.contains("minimum") || s.contains("maximum") || s.contains("exclusiveMinimum") ||
                         s.contains("exclusiveMaximum");
    if (!bounded) {
      *out = use(integer ? "json-int" : "json-number");
      return Status::Ok();
    }
    double lo = -static_cast<double>(kIntLimit), hi = static_cast<double>(kIntLimit);
    bool lo_excl = false, hi_excl = false;
    for (const char* k : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
      if (!s.contains(k)) continue;
      if (!s[k].is_number()) return fail(path, std::string(k) + " must be a number");
      const double v = s[k].get<double>();
      const std::string key = k;
      if (key == "minimum" && v >= lo) lo = v, lo_excl = false;
      if (key == "exclusiveMinimum" && v >= lo) lo = v, lo_excl = true;
      if (key == "maximum" && v <= hi) hi = v, hi_excl = false;
      if (key == "exclusiveMaximum" && v <= hi) hi = v, hi_excl = true;
    }
    lo = std::max(lo, -static_cast<double>(kIntLimit));
    hi = std::min(hi, static_cast<double>(kIntLimit));
    // The integers allowed, then (for number) the integer parts a fraction can follow.
    int64_t ilo = static_cast<int64_t>(std::ceil(lo)), ihi = static_cast<int64_t>(std::floor(hi));
    if (lo_excl && static_cast<double>(ilo) == lo) ++ilo;
    if (hi_excl && static_cast<double>(ihi) == hi) --ihi;
    if (ilo > ihi) {
      if (!integer) return fail(path, "the range holds no number this translator can write (no integer inside)");
      return fail(path, "the range holds no integer");
    }
    std::string body = int_range(ilo, ihi);
    if (!integer) {
      // v.fraction lies in (v, v + 1) for v >= 0: allowed when v >= lo and v + 1 <= hi.
      const int64_t flo = std::max<int64_t>(0, static_cast<int64_t>(std::ceil(lo)));
      const int64_t fhi = static_cast<int64_t>(std::floor(hi)) - 1;
      if (flo <= fhi) body = "(" + body + ") | (" + unsigned_range(flo, fhi) + ") \".\" [0-9]{1,6}";
    }
    *out = as_rule(hint, body);
    return Status::Ok();
  }

  Status visit_object(const Json& s, const std::string& hint, const std::string& path, int depth, std::string* out) {
    std::set<std::string> required;
    if (s.contains("required")) {
      if (!s["required"].is_array()) return fail(path, "required must be an array");
      for (const Json& r : s["required"]) {
        if (!r.is_string()) return fail(path, "required must list strings");
        required.insert(r.get<std::string>());
      }
    }
    std::vector<std::string> req_members, opt_members;
    if (s.contains("properties")) {
      if (!s["properties"].is_object()) return fail(path, "properties must be an object");
      for (const auto& [name, sub] : s["properties"].items()) {
        std::string value;
        LMRT_RETURN_IF_ERROR(visit(sub, hint + "-" + name, path + "/properties/" + name, depth + 1, &value));
        const std::string member = literal(Json(name).dump()) + " \":\" " + use("ws") + " " + value;
        (required.count(name) != 0 ? req_members : opt_members).push_back(member);
      }
    }
    for (const std::string& r : required)
      if (!s.contains("properties") || !s["properties"].contains(r))
        return fail(path, "required property '" + r + "' has no schema in properties");
    // Extra members: only when additionalProperties is true or a schema (or there are no
    // properties at all and it is absent: a plain "type": "object").
    std::string extra;
    const bool has_props = !req_members.empty() || !opt_members.empty();
    if (s.contains("additionalProperties")
            ? !(s["additionalProperties"].is_boolean() && !s["additionalProperties"].get<bool>())
            : !has_props) {
      std::string value = use("json-value");
      if (s.contains("additionalProperties") && s["additionalProperties"].is_object())
        LMRT_RETURN_IF_ERROR(
            visit(s["additionalProperties"], hint + "-additional", path + "/additionalProperties", depth + 1, &value));
      // Extra member names: 1..32 characters (a subset), so a model cannot wander off in a name.
      extra = "\"\\\"\" " + use("json-char") + "{1,32} \"\\\"\" \":\" " + use("ws") + " " + value;
    }
    // maxProperties bounds the extra members (the declared ones must all fit under it).
    int64_t max_props = -1;
    LMRT_RETURN_IF_ERROR(count(s, "maxProperties", path, -1, &max_props));
    const int64_t declared = static_cast<int64_t>(req_members.size() + opt_members.size());
    if (max_props >= 0 && declared > max_props)
      return fail(path, "maxProperties below the number of declared properties is not supported");
    const int64_t extra_max = max_props < 0 ? -1 : max_props - declared;
    if (extra_max == 0) extra.clear();
    const std::string sep = "\",\" " + use("ws") + " ";
    std::string body = "\"{\" " + use("ws") + " ";
    if (!req_members.empty()) {
      for (size_t i = 0; i < req_members.size(); ++i) body += (i ? sep : "") + req_members[i] + " ";
      for (const std::string& m : opt_members) body += "(" + sep + m + ")? ";
      if (!extra.empty()) body += repeated(sep + extra, 0, extra_max) + " ";
    } else {
      // No member is required: the first one present is any optional one (or an extra member),
      // followed by any of the members after it. What may follow member i is a rule of its own that
      // refers to the one of member i + 1, so the text grows linearly; writing each alternative's
      // followers out in full was quadratic (20000 properties made 24 GB).
      std::vector<std::string> firsts(opt_members.size());
      std::string after = extra.empty() ? "" : repeated(sep + extra, 0, extra_max) + " ";  // the last member's
      for (size_t i = opt_members.size(); i-- > 0;) {
        firsts[i] = opt_members[i] + " " + after;
        if (i > 0)
          after = as_rule(hint + "-after-" + std::to_string(i - 1), "(" + sep + opt_members[i] + ")? " + after) + " ";
      }
      if (!extra.empty())
        firsts.push_back(extra + " " + repeated(sep + extra, 0, extra_max < 0 ? -1 : extra_max - 1) + " ");
      if (!firsts.empty()) {
        std::string alts;
        for (const std::string& f : firsts) alts += (alts.empty() ? "" : " | ") + f;
        body += "(" + alts + ")? ";
      }
    }
    body += "\"}\"";
    *out = as_rule(hint, body);
    return Status::Ok();
  }

  Status visit_array(const Json& s, const std::string& hint, const std::string& path, int depth, std::string* out) {
    int64_t min = 0, max = -1;
    LMRT_RETURN_IF_ERROR(count(s, "minItems", path, 0, &min));
    LMRT_RETURN_IF_ERROR(count(s, "maxItems", path, -1, &max));
    if (max >= 0 && max < min) return fail(path, "maxItems is below minItems");
    if (min > kMaxCount) return fail(path, "minItems above " + std::to_string(kMaxCount) + " is not supported");
    std::vector<std::string> prefix;
    if (s.contains("prefixItems")) {
      if (!s["prefixItems"].is_array()) return fail(path, "prefixItems must be an array");
      for (size_t i = 0; i < s["prefixItems"].size(); ++i) {
        std::string item;
        LMRT_RETURN_IF_ERROR(visit(s["prefixItems"][i], hint + "-" + std::to_string(i),
                                   path + "/prefixItems/" + std::to_string(i), depth + 1, &item));
        prefix.push_back(item);
      }
    }
    std::string item = use("json-value");
    bool more_allowed = true;
    if (s.contains("items")) {
      if (s["items"].is_boolean() && !s["items"].get<bool>()) {
        more_allowed = false;
      } else {
        LMRT_RETURN_IF_ERROR(visit(s["items"], hint + "-item", path + "/items", depth + 1, &item));
      }
    }
    const std::string sep = "\",\" " + use("ws") + " ";
    std::string body = "\"[\" " + use("ws") + " ";
    if (!prefix.empty()) {
      // The prefix items in order (all of them: a subset of the valid arrays), then more if allowed.
      if (max >= 0 && static_cast<int64_t>(prefix.size()) > max) return fail(path, "maxItems is below prefixItems");
      for (size_t i = 0; i < prefix.size(); ++i) body += (i ? sep : "") + prefix[i] + " ";
      const int64_t n = static_cast<int64_t>(prefix.size());
      if (more_allowed && (max < 0 || max > n))
        body += repeated(sep + item, std::max<int64_t>(0, min - n), max < 0 ? -1 : max - n) + " ";
      else if (min > n)
        return fail(path, "minItems needs more items than prefixItems allows");
    } else if (max != 0) {
      const std::string rest = repeated(sep + item, min > 0 ? min - 1 : 0, max < 0 ? -1 : max - 1);
      body += min > 0 ? item + " " + rest + " " : "(" + item + " " + rest + ")? ";
    }
    body += "\"]\"";
    *out = as_rule(hint, body);
    return Status::Ok();
  }

  const Json& root_;
  std::map<std::string, std::string> rules_;
  size_t rule_bytes_ = 0;  // of the rules made so far
  std::set<std::string> reserved_;
  std::set<std::string> used_;
  std::map<std::string, std::string> ref_rules_;
  std::set<std::string> pending_refs_;
};

}  // namespace

Status json_schema_to_gbnf(std::string_view schema, std::string* gbnf, Grammar* parsed) {
  Json root;
  LMRT_RETURN_IF_ERROR(parse_bounded_json(schema, "json schema", &root));
  SchemaTranslator t(root);
  LMRT_RETURN_IF_ERROR(t.translate(gbnf));
  // A $ref cycle that reads no character on the way ({"$ref": "#"}, or through anyOf) is a left-recursive
  // grammar: refused here, naming the schema, rather than by the first generation that parses it.
  Grammar check;
  if (Status s = parse_gbnf(*gbnf, parsed != nullptr ? parsed : &check); !s.ok()) {
    gbnf->clear();
    if (s.message().find("left-recursive") == std::string::npos)
      return Error(Code::internal, "json schema: the grammar made from it does not parse: " + s.message());
    return Error(Code::invalid_argument,
                 "json schema: a $ref cycle reaches itself before any character, which no grammar can match (" +
                     s.message() + ")");
  }
  return Status::Ok();
}

std::string json_object_gbnf() {
  std::string out = "root ::= json-object\n";
  for (const char* p : {"ws", "json-char", "json-string", "json-int", "json-number", "json-boolean", "json-null",
                        "json-value", "json-object", "json-array"})
    out += std::string(p) + " ::= " + primitives().at(p) + "\n";
  return out;
}

}  // namespace lmrt
