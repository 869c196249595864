// The fixture of the HTTP source tests: an HttpSource on a free loopback port in front of a
// ScriptedIntake, so the test plays the pipeline.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>

#include "connectors/http/http_source.h"
#include "tests/connectors/http/scripted_intake.h"
#include "tests/connectors/http/test_client.h"

namespace sluice::http::testing {

class HttpSourceTest : public ::testing::Test {
 protected:
  void start(const std::function<void(HttpSourceConfig&)>& tweak = {}) {
    HttpSourceConfig c;
    c.set_listen("127.0.0.1:0");
    c.add_models("sluice");
    c.add_models("tiny");
    c.set_default_priority("P1");
    if (tweak) tweak(c);
    source_ = std::make_unique<HttpSource>(c, "web", intake_);
    source_->start();
  }
  std::uint16_t port() const { return source_->port(); }

  // One request on a fresh connection.
  ClientResponse roundtrip(const std::string& request) {
    TestClient client(port());
    client.send(request);
    return client.read_response();
  }

  static std::string chat_body(bool stream, const std::string& extra = "") {
    return std::string("{\"model\":\"sluice\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"stream\":") +
           (stream ? "true" : "false") + extra + "}";
  }

  // The value of a metric series line in the exposition text ("name{labels} value"), or -1.
  double metric(const std::string& series) {
    std::string text = intake_.metrics().exposition();
    std::size_t p = text.find(series + " ");
    if (p == std::string::npos) return -1;
    return std::stod(text.substr(p + series.size() + 1));
  }

  Nanos now() const { return intake_.clock().now(); }

  ScriptedIntake intake_;
  std::unique_ptr<HttpSource> source_;
};

inline nlohmann::json parse_json(const std::string& text) { return nlohmann::json::parse(text); }

}  // namespace sluice::http::testing
