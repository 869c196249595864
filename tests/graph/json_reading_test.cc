// graph/json_reading.h: the checks before parsing untrusted JSON, and the member text and
// minified forms that let a caller pass a member on as it was written.
#include "graph/json_reading.h"

#include <gtest/gtest.h>

#include <string>

namespace sluice {
namespace {

using nlohmann::json;

TEST(JsonReading, ANulByteIsFoundWhereverItIs) {
  EXPECT_FALSE(json_nul_byte(R"({"a":"b"})").has_value());
  EXPECT_EQ(json_nul_byte(std::string("{\"a\":1}\0junk", 12)), 7u);
  EXPECT_EQ(json_nul_byte(std::string("\0", 1)), 0u);
  // What the check is for: the parser stops at the NUL and accepts what came before.
  EXPECT_FALSE(json::parse(std::string("{\"a\":1}\0junk", 12), nullptr, false).is_discarded());
}

TEST(JsonReading, AMembersTextIsCutAsWritten) {
  const std::string doc = R"( { "url" : "/v1/x", "body" : {"z": 1, "a": [1, {"k": "}]\"{"}]} , "n": 2 } )";
  ASSERT_TRUE(json::accept(doc));
  EXPECT_EQ(json_member_text(doc, "body"), R"({"z": 1, "a": [1, {"k": "}]\"{"}]})");
  EXPECT_EQ(json_member_text(doc, "url"), R"("/v1/x")");
  EXPECT_EQ(json_member_text(doc, "n"), "2");
  EXPECT_FALSE(json_member_text(doc, "missing").has_value());
  EXPECT_FALSE(json_member_text("[1,2]", "body").has_value()) << "not an object";
  EXPECT_FALSE(json_member_text("{}", "body").has_value());
  // The last of duplicates, as the parser keeps; an escaped key matches what it means.
  EXPECT_EQ(json_member_text(R"({"body":1,"body":[true]})", "body"), "[true]");
  EXPECT_EQ(json_member_text(R"({"b\u006fdy":{"x":null},"bodyx":3})", "body"), R"({"x":null})");
  EXPECT_EQ(json_member_text(R"({"k\"ey":1,"body":-1.5e3})", "body"), "-1.5e3");
}

TEST(JsonReading, MinifiedDropsOnlyTheSpaceBetweenTokens) {
  const std::string text = "{\n  \"b\" : [1, 2.50, \"a b\\\" c\\\\\"],\n\t\"a\" : { }\r\n}";
  ASSERT_TRUE(json::accept(text));
  const std::string small = json_minified(text);
  EXPECT_EQ(small, R"({"b":[1,2.50,"a b\" c\\"],"a":{}})");
  EXPECT_EQ(json::parse(small), json::parse(text));
  EXPECT_EQ(json_minified(small), small);
}

}  // namespace
}  // namespace sluice
