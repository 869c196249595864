// A large single-event answer (embeddings, ranked chunks) is held once on its way out: the
// node's buffer is handed to the sink, wrapped as the API body in place, and becomes the bytes
// sent. These tests check the bytes are the same as the copying path's and that the buffer is
// the node's own (its address is kept where its capacity allows).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>

#include "connectors/http/http_response.h"
#include "connectors/http/openai_response.h"
#include "graph/request.h"

namespace sluice::http {
namespace {

TEST(HttpResponseBuffers, AMovedBodyIsSerializedToTheSameBytesInItsOwnBuffer) {
  HttpResponse copied{200, "application/json", {{"X-Request-Id", "embd-1"}}, std::string(100000, 'x')};
  const std::string expected = serialize_response(copied, false);

  HttpResponse moved = copied;
  moved.body.reserve(moved.body.size() + 4096);  // room for the head, as the node's reserve leaves
  const char* buffer = moved.body.data();
  const std::string bytes = serialize_response(std::move(moved), false);
  EXPECT_EQ(bytes, expected);
  EXPECT_EQ(bytes.data(), buffer);
  EXPECT_EQ(serialize_response(HttpResponse{204, "text/plain", {}, ""}, true),
            serialize_response(static_cast<const HttpResponse&>(HttpResponse{204, "text/plain", {}, ""}), true));
}

TEST(HttpResponseBuffers, PrependMembersPutsTheMembersFirstInTheObjectsBuffer) {
  EXPECT_EQ(prepend_members("{}", R"("object":"list")"), R"({"object":"list"})");
  EXPECT_EQ(prepend_members(R"({"data":[1]})", R"("object":"list","model":"m")"), R"({"object":"list","model":"m","data":[1]})");

  std::string event = R"({"data":[)" + std::string(50000, '1') + "]}";
  event.reserve(event.size() + 256);
  const char* buffer = event.data();
  const std::string body = prepend_members(std::move(event), R"("object":"list")");
  EXPECT_EQ(body.data(), buffer);
  const std::string front = R"({"object":"list","data":[1)";
  EXPECT_EQ(body.substr(0, front.size()), front);
  EXPECT_EQ(body.size(), front.size() - 1 + 50000 + 2);
}

class KeepingSink : public ResponseSink {
 public:
  void on_token(std::string_view) override {}
  void on_event(std::string_view type, std::string_view json) override { viewed = std::string(type) + ":" + std::string(json); }
  void on_owned_event(std::string_view, std::string&& json) override { kept = std::move(json); }
  void on_complete(const Request&) override {}
  std::string viewed, kept;
};

TEST(HttpResponseBuffers, AnOwnedEventReachesTheSinkWithoutACopyAndTapsStillSeeIt) {
  auto sink = std::make_shared<KeepingSink>();
  auto tap = std::make_shared<KeepingSink>();
  Request request(1, RequestInput{}, sink);
  request.add_tap(tap);
  std::string event = R"({"data":[)" + std::string(50000, '2') + "]}";
  const char* buffer = event.data();
  const std::string text = event;
  request.emit_owned_event("embeddings", std::move(event));
  EXPECT_EQ(sink->kept.data(), buffer);
  EXPECT_EQ(sink->kept, text);
  EXPECT_EQ(tap->viewed, "embeddings:" + text);  // a tap's on_event: taps are not owners

  // A sink that does not keep events gets the text through on_event, as from emit_event.
  class ViewingSink : public ResponseSink {
   public:
    void on_token(std::string_view) override {}
    void on_event(std::string_view, std::string_view json) override { seen = json; }
    void on_complete(const Request&) override {}
    std::string seen;
  };
  auto viewing = std::make_shared<ViewingSink>();
  Request other(2, RequestInput{}, viewing);
  other.emit_owned_event("retrieval", R"({"hits":[]})");
  EXPECT_EQ(viewing->seen, R"({"hits":[]})");
}

}  // namespace
}  // namespace sluice::http
