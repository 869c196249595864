// HttpRequestParser: framing, limits and malformed input, without sockets.
#include "connectors/http/http_parser.h"

#include <gtest/gtest.h>

namespace sluice::http {
namespace {

using State = HttpRequestParser::State;

HttpRequestParser parser(std::size_t max_header = 1024, std::size_t max_body = 4096) {
  return HttpRequestParser(ParseLimits{max_header, max_body});
}

TEST(HttpParser, ParsesGetWithHeaders) {
  auto p = parser();
  std::string in = "GET /healthz?x=1 HTTP/1.1\r\nHost: a\r\nX-Priority:  P1 \r\n\r\n";
  ASSERT_EQ(p.parse(in), State::kComplete);
  EXPECT_EQ(p.consumed(), in.size());
  HttpRequest r = p.take();
  EXPECT_EQ(r.method, "GET");
  EXPECT_EQ(r.target, "/healthz?x=1");
  EXPECT_EQ(r.path(), "/healthz");
  ASSERT_NE(r.header("x-priority"), nullptr);
  EXPECT_EQ(*r.header("x-priority"), "P1");
  EXPECT_TRUE(r.keep_alive);
  EXPECT_TRUE(r.body.empty());
}

TEST(HttpParser, ParsesContentLengthBodyArrivingByteByByte) {
  std::string in = "POST /v1/completions HTTP/1.1\r\nContent-Length: 11\r\n\r\nhello world";
  auto p = parser();
  for (std::size_t n = 1; n < in.size(); ++n) {
    ASSERT_EQ(p.parse(std::string_view(in).substr(0, n)), State::kNeedMore) << "after " << n << " bytes";
  }
  ASSERT_EQ(p.parse(in), State::kComplete);
  EXPECT_EQ(p.take().body, "hello world");
}

TEST(HttpParser, PipelinedRequestsAreParsedOneAtATime) {
  std::string in = "POST /a HTTP/1.1\r\nContent-Length: 3\r\n\r\nabcGET /b HTTP/1.1\r\n\r\n";
  auto p = parser();
  ASSERT_EQ(p.parse(in), State::kComplete);
  EXPECT_EQ(p.take().body, "abc");
  std::size_t used = p.consumed();
  p.reset();
  ASSERT_EQ(p.parse(std::string_view(in).substr(used)), State::kComplete);
  EXPECT_EQ(p.take().target, "/b");
  EXPECT_EQ(used + p.consumed(), in.size());
}

TEST(HttpParser, AcceptsBareLfAndLeadingEmptyLines) {
  auto p = parser();
  ASSERT_EQ(p.parse("\r\n\r\nGET / HTTP/1.1\nHost: a\n\n"), State::kComplete);
  EXPECT_EQ(*p.take().header("host"), "a");
}

TEST(HttpParser, KeepAliveFollowsVersionAndConnectionHeader) {
  auto p = parser();
  ASSERT_EQ(p.parse("GET / HTTP/1.0\r\n\r\n"), State::kComplete);
  EXPECT_FALSE(p.take().keep_alive);
  p.reset();
  ASSERT_EQ(p.parse("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n"), State::kComplete);
  EXPECT_TRUE(p.take().keep_alive);
  p.reset();
  ASSERT_EQ(p.parse("GET / HTTP/1.1\r\nConnection: foo, close\r\n\r\n"), State::kComplete);
  EXPECT_FALSE(p.take().keep_alive);
}

TEST(HttpParser, ExpectContinueIsReportedWhileTheBodyIsMissing) {
  auto p = parser();
  ASSERT_EQ(p.parse("POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n"), State::kNeedMore);
  EXPECT_TRUE(p.head_parsed());
  EXPECT_TRUE(p.expects_continue());
}

struct BadInput {
  const char* name;
  std::string bytes;
  int status;
  const char* message_part;
};

class HttpParserErrors : public ::testing::TestWithParam<BadInput> {};

TEST_P(HttpParserErrors, AnswersStatusWithMessage) {
  const BadInput& c = GetParam();
  auto p = parser(/*max_header=*/128, /*max_body=*/1024);
  ASSERT_EQ(p.parse(c.bytes), State::kError);
  EXPECT_EQ(p.error_status(), c.status);
  EXPECT_NE(p.error_message().find(c.message_part), std::string::npos) << p.error_message();
}

INSTANTIATE_TEST_SUITE_P(
    All, HttpParserErrors,
    ::testing::Values(
        BadInput{"HeadTooLargeStillArriving", "GET / HTTP/1.1\r\nX-A: " + std::string(200, 'a'), 431, "max_header_bytes"},
        BadInput{"HeadTooLargeComplete", "GET / HTTP/1.1\r\nX-A: " + std::string(120, 'a') + "\r\n\r\n", 431,
                 "max_header_bytes"},
        BadInput{"BodyTooLargeBeforeItIsRead", "POST / HTTP/1.1\r\nContent-Length: 1025\r\n\r\n", 413, "max_body_bytes"},
        BadInput{"HugeContentLength", "POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n", 413,
                 "max_body_bytes"},
        BadInput{"ChunkedBody", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 411, "Content-Length"},
        BadInput{"OtherTransferEncoding", "POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 501, "gzip"},
        BadInput{"NonNumericLength", "POST / HTTP/1.1\r\nContent-Length: 12a\r\n\r\n", 400, "Content-Length"},
        BadInput{"NegativeLength", "POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400, "Content-Length"},
        BadInput{"ConflictingLengths", "POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400,
                 "conflicting"},
        BadInput{"FoldedHeader", "GET / HTTP/1.1\r\nX-A: a\r\n b\r\n\r\n", 400, "folding"},
        BadInput{"SpaceBeforeColon", "GET / HTTP/1.1\r\nX-A : a\r\n\r\n", 400, "header name"},
        BadInput{"NoColon", "GET / HTTP/1.1\r\nnocolon\r\n\r\n", 400, "name: value"},
        BadInput{"ControlCharInValue", std::string("GET / HTTP/1.1\r\nX-A: a\x01z\r\n\r\n"), 400, "control character"},
        BadInput{"TwoTokens", "GET /\r\n\r\n", 400, "request line"},
        BadInput{"FourTokens", "GET / x HTTP/1.1\r\n\r\n", 400, "request line"},
        BadInput{"BadVersion", "GET / HTTQ/1.1\r\n\r\n", 400, "HTTP version"},
        BadInput{"Http2", "GET / HTTP/2.0\r\n\r\n", 505, "HTTP/1.1"},
        BadInput{"BadMethodChar", "G(T / HTTP/1.1\r\n\r\n", 400, "method"},
        BadInput{"UnknownExpectation", "POST / HTTP/1.1\r\nExpect: magic\r\n\r\n", 417, "magic"}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace sluice::http
