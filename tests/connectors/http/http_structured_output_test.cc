// Structured outputs over loopback on the default pipeline: response_format json_schema and
// json_object, and tool calls (a named function and tool_choice "required"), with
// stories260K (a toy that knows no JSON: what parses is the constraint's doing), streamed and
// not; and every refusal, named: keywords beyond the subset, tool_choice auto, the legacy
// functions, a max_tokens too small for the schema, and an extractive pipeline.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/connectors/http/default_pipeline.h"

namespace sluice::http::testing {
namespace {

using nlohmann::json;

const json kPet = json::parse(R"({"type":"object","properties":{
    "name":{"type":"string"},"legs":{"type":"integer"},"kind":{"enum":["cat","dog","bird"]}},
    "required":["name","legs","kind"],"additionalProperties":false})");

const json kTools = json::parse(R"([
  {"type":"function","function":{"name":"get_weather","parameters":{"type":"object",
     "properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city","days"],"additionalProperties":false}}},
  {"type":"function","function":{"name":"tell_story","parameters":{"type":"object",
     "properties":{"about":{"type":"string"}},"required":["about"],"additionalProperties":false}}}])");

struct Reply {
  int status = 0;
  json body;
};

Reply post(const DefaultPipeline& p, json body) {
  body["model"] = "sluice";
  if (!body.contains("messages")) body["messages"] = {{{"role", "user"}, {"content", "Tell me about a pet."}}};
  TestClient c(p.served->source->port());
  c.send(TestClient::post("/v1/chat/completions", body.dump()));
  auto r = c.read_response();
  return {r.status, json::parse(r.body, nullptr, false)};
}

// The streamed deltas, accumulated as an SDK does.
json stream(const DefaultPipeline& p, json body) {
  body["model"] = "sluice";
  body["stream"] = true;
  body["messages"] = {{{"role", "user"}, {"content", "Tell me about a pet."}}};
  TestClient c(p.served->source->port());
  c.send(TestClient::post("/v1/chat/completions", body.dump()));
  EXPECT_EQ(c.read_head().status, 200);
  json out{{"content", ""}, {"tool_calls", json::array()}, {"finish_reason", nullptr}};
  while (auto ev = c.next_event()) {
    if (ev->data == "[DONE]") break;
    const json chunk = json::parse(ev->data);
    if (chunk["choices"].empty()) continue;
    const json& choice = chunk["choices"][0];
    const json& delta = choice["delta"];
    if (delta.contains("content") && delta["content"].is_string()) out["content"] = out["content"].get<std::string>() + delta["content"].get<std::string>();
    if (delta.contains("tool_calls")) out["tool_calls"] = delta["tool_calls"];
    if (!choice["finish_reason"].is_null()) out["finish_reason"] = choice["finish_reason"];
  }
  return out;
}

void expect_pet(const std::string& text) {
  const json pet = json::parse(text, nullptr, false);
  ASSERT_TRUE(pet.is_object()) << text;
  EXPECT_TRUE(pet["name"].is_string()) << text;
  EXPECT_TRUE(pet["legs"].is_number_integer()) << text;
  EXPECT_TRUE(pet["kind"] == "cat" || pet["kind"] == "dog" || pet["kind"] == "bird") << text;
}

struct StructuredOverHttp : ::testing::Test {
  void SetUp() override {
    if (stories_model().empty()) GTEST_SKIP() << "needs ../shared/models/stories260K.gguf";
  }
};

TEST_F(StructuredOverHttp, JsonSchemaAnswersParseStreamedOrNot) {
  DefaultPipeline p(stories_model());
  const json format{{"type", "json_schema"}, {"json_schema", {{"name", "pet"}, {"strict", true}, {"schema", kPet}}}};
  for (int seed = 1; seed <= 5; ++seed) {
    Reply r = post(p, {{"response_format", format}, {"seed", seed}, {"max_tokens", 64}});
    ASSERT_EQ(r.status, 200) << r.body.dump();
    const json& choice = r.body["choices"][0];
    expect_pet(choice["message"]["content"]);
    EXPECT_EQ(choice["finish_reason"], "stop");
    EXPECT_GT(r.body["usage"]["completion_tokens"].get<int>(), 0);
  }
  const json s = stream(p, {{"response_format", format}, {"max_tokens", 64}});
  expect_pet(s["content"]);
  EXPECT_EQ(s["finish_reason"], "stop");
  Reply any = post(p, {{"response_format", {{"type", "json_object"}}}, {"max_tokens", 40}});
  ASSERT_EQ(any.status, 200) << any.body.dump();
  EXPECT_TRUE(json::parse(any.body["choices"][0]["message"]["content"].get<std::string>()).is_object());
}

TEST_F(StructuredOverHttp, ToolCallsCarryArgumentsOfTheFunctionsSchema) {
  DefaultPipeline p(stories_model());
  const json named{{"type", "function"}, {"function", {{"name", "get_weather"}}}};
  Reply r = post(p, {{"tools", kTools}, {"tool_choice", named}, {"max_tokens", 48}});
  ASSERT_EQ(r.status, 200) << r.body.dump();
  const json& choice = r.body["choices"][0];
  EXPECT_TRUE(choice["message"]["content"].is_null());
  EXPECT_EQ(choice["finish_reason"], "tool_calls");
  const json& call = choice["message"]["tool_calls"][0];
  EXPECT_EQ(call["type"], "function");
  EXPECT_EQ(call["id"].get<std::string>().rfind("call_", 0), 0u);
  EXPECT_EQ(call["function"]["name"], "get_weather");
  const json args = json::parse(call["function"]["arguments"].get<std::string>());
  EXPECT_TRUE(args["city"].is_string());
  EXPECT_TRUE(args["days"].is_number_integer());

  const json s = stream(p, {{"tools", kTools}, {"tool_choice", named}, {"max_tokens", 48}});
  EXPECT_EQ(s["content"], "");
  EXPECT_EQ(s["finish_reason"], "tool_calls");
  ASSERT_EQ(s["tool_calls"].size(), 1u);
  EXPECT_EQ(s["tool_calls"][0]["index"], 0);
  EXPECT_EQ(s["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_TRUE(json::parse(s["tool_calls"][0]["function"]["arguments"].get<std::string>()).contains("city"));

  for (int seed = 1; seed <= 4; ++seed) {
    Reply any = post(p, {{"tools", kTools}, {"tool_choice", "required"}, {"seed", seed}, {"max_tokens", 48}});
    ASSERT_EQ(any.status, 200) << any.body.dump();
    const json& c = any.body["choices"][0]["message"]["tool_calls"][0]["function"];
    const json a = json::parse(c["arguments"].get<std::string>());
    if (c["name"] == "get_weather") EXPECT_TRUE(a.contains("city") && a.contains("days")) << a;
    else EXPECT_TRUE(c["name"] == "tell_story" && a.contains("about")) << c;
  }
  // tool_choice none: the tools are ignored and the answer is text.
  Reply none = post(p, {{"tools", kTools}, {"tool_choice", "none"}, {"max_tokens", 8}});
  ASSERT_EQ(none.status, 200);
  EXPECT_TRUE(none.body["choices"][0]["message"]["content"].is_string());
  EXPECT_FALSE(none.body["choices"][0]["message"].contains("tool_calls"));
}

TEST_F(StructuredOverHttp, RefusalsNameTheFieldAndTheReason) {
  DefaultPipeline p(stories_model());
  struct Case {
    json body;
    std::string param, code;
  };
  json pattern = kPet;
  pattern["properties"]["name"]["pattern"] = "^[A-Z]";
  const Case cases[] = {
      {{{"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "x"}, {"schema", pattern}}}}}},
       "response_format.json_schema.schema.properties.name.pattern", "unsupported"},
      {{{"tools", kTools}}, "tool_choice", "unsupported"},
      {{{"tools", kTools}, {"tool_choice", {{"type", "function"}, {"function", {{"name", "fly"}}}}}}, "tool_choice.function.name",
       "invalid_value"},
      {{{"functions", {{{"name", "f"}}}}}, "functions", "unsupported"},
      {{{"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "pet"}, {"schema", kPet}}}}}, {"max_tokens", 10}},
       "max_tokens", "invalid_value"},
      {{{"response_format", {{"type", "json_schema"}}}}, "response_format.json_schema", "invalid_value"},
  };
  for (const Case& c : cases) {
    Reply r = post(p, c.body);
    EXPECT_EQ(r.status, 400) << c.body.dump();
    EXPECT_EQ(r.body["error"]["param"], c.param) << r.body.dump();
    EXPECT_EQ(r.body["error"]["code"], c.code) << r.body.dump();
  }
}

TEST(StructuredExtractive, AnExtractivePipelineRefusesStructuredOutput) {
  DefaultPipeline p("");
  const json format{{"type", "json_schema"}, {"json_schema", {{"name", "pet"}, {"schema", kPet}}}};
  Reply r = post(p, {{"response_format", format}});
  EXPECT_EQ(r.status, 400) << r.body.dump();
  EXPECT_EQ(r.body["error"]["code"], "unsupported");
  EXPECT_EQ(r.body["error"]["param"], "response_format");
  Reply t = post(p, {{"tools", kTools}, {"tool_choice", "required"}});
  EXPECT_EQ(t.status, 400) << t.body.dump();
  EXPECT_EQ(t.body["error"]["param"], "tools");
}

}  // namespace
}  // namespace sluice::http::testing
