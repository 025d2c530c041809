// JSON Schema to GBNF: a grammar whose every sentence is JSON that validates against the schema
// (a subset of the valid documents where the schema allows more than a grammar can say, e.g.
// number ranges with fractions). Output is compact: at most one space after ',' and ':'.
//
// Supported: type (one or a list), properties (emitted in the schema's order: required first,
// then the optional ones), required, additionalProperties (false or absent: none; true or a
// schema: extra members, named in 1..32 characters, after the declared ones; maxProperties bounds them), enum, const,
// items, prefixItems, minItems, maxItems, $ref to "#/..." (recursion allowed), $defs/definitions, anyOf, oneOf, allOf
// with one member, string minLength/maxLength, format (date, time, date-time, uuid, email), integer and number
// minimum/maximum/exclusiveMinimum/exclusiveMaximum. Anything else that constrains the value (pattern, not, if/then,
// ...) is refused with an error naming the keyword.
#pragma once

#include <string>
#include <string_view>

#include "runtime/util/status.h"

namespace lmrt {

struct Grammar;

// The text is parsed before it is returned (a $ref cycle that reads nothing is refused then); `parsed`, when
// not null, receives that parse, so that a caller about to parse it need not do it again.
// Errors: invalid_argument "json schema at PATH: ..." (bad JSON, unsupported keyword, bad $ref, a
// grammar larger than the GBNF parser takes: kMaxGrammarText, refused while it is being built; a $ref
// cycle reaching itself before any character).
Status json_schema_to_gbnf(std::string_view schema, std::string* gbnf, Grammar* parsed = nullptr);

// The GBNF of any JSON object (the CLI's --json-object, OpenAI's response_format json_object).
std::string json_object_gbnf();

}  // namespace lmrt
