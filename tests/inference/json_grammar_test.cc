// The JSON Schema compiler and matcher (inference/constrain/): what each schema accepts and
// refuses byte by byte, the shortest completion, and the keywords refused by name.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "inference/constrain/json_grammar.h"
#include "inference/constrain/json_matcher.h"

namespace sluice::constrain {
namespace {

using ojson = nlohmann::ordered_json;

std::shared_ptr<const JsonGrammar> compile(const std::string& schema) {
  GrammarError e;
  auto g = JsonGrammar::compile(ojson::parse(schema), "schema", &e);
  EXPECT_TRUE(g) << e.path << ": " << e.message;
  return g;
}

// Feeds `text`; returns the state (empty when a byte was refused).
MatchState feed(const JsonMatcher& m, std::string_view text) {
  MatchState s = m.start(), next;
  for (unsigned char c : text) {
    m.advance(s, c, next);
    if (next.empty()) return next;
    std::swap(s, next);
  }
  return s;
}

bool complete(const JsonGrammar& g, std::string_view text) {
  JsonMatcher m(g);
  MatchState s = feed(m, text);
  return !s.empty() && m.accepts(s);
}
bool prefix_ok(const JsonGrammar& g, std::string_view text) {
  JsonMatcher m(g);
  return !feed(m, text).empty();
}

TEST(JsonGrammar, ObjectWritesItsPropertiesInSchemaOrder) {
  auto g = compile(R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},
                       "required":["name","age"],"additionalProperties":false})");
  EXPECT_TRUE(complete(*g, R"({"name":"Lily","age":3})"));
  EXPECT_TRUE(complete(*g, R"({"name": "Lily", "age": 3})"));  // one space after ':' and ','
  EXPECT_FALSE(prefix_ok(*g, R"({"age")"));                    // schema order
  EXPECT_FALSE(prefix_ok(*g, R"({ "name")"));                  // no space elsewhere
  EXPECT_FALSE(prefix_ok(*g, R"({"name":"Lily","age":3.5)"));  // integer
  EXPECT_FALSE(prefix_ok(*g, R"({"name":"Lily"})"));           // every property
  EXPECT_FALSE(complete(*g, R"({"name":"Lily","age":3)"));
  JsonMatcher m(*g);
  MatchState done = feed(m, R"({"name":"Lily","age":3})");
  EXPECT_TRUE(m.finished(done));
  EXPECT_EQ(m.min_remaining(m.start()), std::string(R"({"name":"","age":0})").size());
  EXPECT_EQ(m.min_remaining(feed(m, R"({"name":"Li)")), std::string(R"(","age":0})").size());
  EXPECT_EQ(m.min_remaining(feed(m, R"({"name":"Lily","age":3)")), 1u);
}

TEST(JsonGrammar, StringsEscapesAndUtf8) {
  auto g = compile(R"({"type":"string","minLength":2,"maxLength":4})");
  EXPECT_TRUE(complete(*g, R"("ab")"));
  EXPECT_TRUE(complete(*g, R"("a\n\u00e9")"));
  EXPECT_TRUE(complete(*g, "\"\xc3\xa9t\xc3\xa9\""));
  EXPECT_FALSE(prefix_ok(*g, R"("a")"));        // under minLength
  EXPECT_FALSE(prefix_ok(*g, R"("abcde)"));     // over maxLength
  EXPECT_FALSE(prefix_ok(*g, "\"a\nb"));        // raw control character
  EXPECT_FALSE(prefix_ok(*g, R"("a\x)"));       // bad escape
  EXPECT_FALSE(prefix_ok(*g, "\"a\xff"));       // not UTF-8
  EXPECT_FALSE(prefix_ok(*g, "\"a\xc3z"));      // broken sequence
}

TEST(JsonGrammar, NumbersEndWhereTheirParentContinues) {
  auto g = compile(R"({"type":"array","items":{"type":"number"},"minItems":1,"maxItems":3})");
  EXPECT_TRUE(complete(*g, "[1,-2.5,3e-7]"));
  EXPECT_TRUE(complete(*g, "[0]"));
  EXPECT_FALSE(prefix_ok(*g, "[]"));
  EXPECT_FALSE(prefix_ok(*g, "[01"));
  EXPECT_FALSE(prefix_ok(*g, "[1,2,3,"));
  EXPECT_FALSE(prefix_ok(*g, "[1.]"));
  EXPECT_FALSE(prefix_ok(*g, "[" + std::string(30, '1')));  // 24 characters at most
  auto top = compile(R"({"type":"integer"})");
  EXPECT_TRUE(complete(*top, "42"));
  JsonMatcher m(*top);
  EXPECT_FALSE(m.finished(feed(m, "42")));  // more digits may follow
}

TEST(JsonGrammar, IntegerBoundsAreKeptDigitByDigit) {
  auto g = compile(R"({"type":"integer","minimum":-5,"maximum":120})");
  for (const char* ok : {"0", "-5", "-1", "7", "99", "120"}) EXPECT_TRUE(complete(*g, ok)) << ok;
  for (const char* bad : {"-6", "121", "130", "-0", "1200", "-50"}) EXPECT_FALSE(complete(*g, bad)) << bad;
  EXPECT_FALSE(prefix_ok(*g, "130"));  // no 130... is <= 120
  EXPECT_TRUE(prefix_ok(*g, "12"));
  auto high = compile(R"({"type":"object","properties":{"n":{"type":"integer","exclusiveMinimum":999}},"required":["n"]})");
  JsonMatcher m(*high);
  EXPECT_EQ(m.min_remaining(m.start()), std::string(R"({"n":1000})").size());
  EXPECT_EQ(m.min_remaining(feed(m, R"({"n":5)")), 4u);  // 5000}
  EXPECT_TRUE(complete(*high, R"({"n":1000})"));
  EXPECT_FALSE(complete(*high, R"({"n":999})"));
  // zod's .int(): the safe-integer range.
  auto zod = compile(R"({"type":"integer","minimum":-9007199254740991,"maximum":9007199254740991})");
  EXPECT_TRUE(complete(*zod, "-9007199254740991"));
  EXPECT_FALSE(complete(*zod, "9007199254740992"));
  GrammarError e;
  EXPECT_FALSE(JsonGrammar::compile(ojson::parse(R"({"type":"integer","minimum":3,"maximum":2})"), "schema", &e));
  EXPECT_EQ(e.path, "schema.minimum");
}

TEST(JsonGrammar, EnumConstAnyOfAndNullableTypes) {
  auto g = compile(R"({"type":"object","properties":{
      "mood":{"enum":["happy","sad",3,null]},
      "kind":{"const":"story"},
      "who":{"anyOf":[{"type":"string"},{"type":"array","items":{"type":"string"}}]},
      "note":{"type":["string","null"]},
      "ok":{"type":"boolean"}},"required":["mood","kind","who","note","ok"],"additionalProperties":false})");
  EXPECT_TRUE(complete(*g, R"({"mood":"sad","kind":"story","who":["Tim","Sue"],"note":null,"ok":true})"));
  EXPECT_TRUE(complete(*g, R"({"mood":3,"kind":"story","who":"Tim","note":"x","ok":false})"));
  EXPECT_FALSE(prefix_ok(*g, R"({"mood":"glad")"));
  EXPECT_FALSE(prefix_ok(*g, R"({"mood":null,"kind":"tale")"));
  EXPECT_FALSE(prefix_ok(*g, R"({"mood":null,"kind":"story","who":3)"));
}

TEST(JsonGrammar, RecursiveDefinitionsThroughRef) {
  auto g = compile(R"({"$defs":{"node":{"type":"object","properties":{"name":{"type":"string"},
      "children":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["name","children"],
      "additionalProperties":false}},"$ref":"#/$defs/node"})");
  EXPECT_TRUE(complete(*g, R"({"name":"a","children":[{"name":"b","children":[]}]})"));
  EXPECT_FALSE(prefix_ok(*g, R"({"name":"a","children":[{"name":"b"})"));
  JsonMatcher m(*g);
  EXPECT_EQ(m.min_remaining(m.start()), std::string(R"({"name":"","children":[]})").size());
  // Nesting past the depth limit is refused rather than followed forever.
  std::string deep;
  for (int i = 0; i < JsonGrammar::kMaxDepth; ++i) deep += R"({"name":"","children":[)";
  EXPECT_FALSE(prefix_ok(*g, deep));
}

TEST(JsonGrammar, AnyObjectForJsonObjectMode) {
  auto g = JsonGrammar::any_object();
  EXPECT_TRUE(complete(*g, R"({})"));
  EXPECT_TRUE(complete(*g, R"({"a": [1, {"b": null}, "x", true], "c": -0.5})"));
  EXPECT_FALSE(prefix_ok(*g, R"([1])"));  // an object at the top
  EXPECT_FALSE(prefix_ok(*g, R"({"a" :1})"));
  EXPECT_FALSE(prefix_ok(*g, R"({a:1})"));
}

TEST(JsonGrammar, KeywordsBeyondTheSubsetAreRefusedByName) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"type":"string","pattern":"^a"})", "schema.pattern"},
      {R"({"type":"object","properties":{"age":{"type":"number","minimum":0}}})", "schema.properties.age.minimum"},
      {R"({"oneOf":[{"type":"string"}]})", "schema.oneOf"},
      {R"({"type":"string","format":"date"})", "schema.format"},
      {R"({"type":"object","additionalProperties":{"type":"string"}})", "schema.additionalProperties"},
      {R"({"$ref":"#/$defs/missing"})", "schema.$ref"},
      {R"({"type":"object","properties":{"a":{"type":"string"}},"required":["b"]})", "schema.required"},
      {R"({"type":"thing"})", "schema.type"},
      {R"({"$defs":{"n":{"type":"object","properties":{"n":{"$ref":"#/$defs/n"}},"required":["n"]}},"$ref":"#/$defs/n"})",
       "schema"},
  };
  for (const auto& [schema, path] : cases) {
    GrammarError e;
    EXPECT_FALSE(JsonGrammar::compile(ojson::parse(schema), "schema", &e)) << schema;
    EXPECT_EQ(e.path, path) << schema << " -> " << e.message;
    EXPECT_FALSE(e.message.empty());
  }
}

}  // namespace
}  // namespace sluice::constrain
