// The document id rule (graph/document_id.h) at its edges: the 512-byte limit with multi-byte
// characters on it, every way UTF-8 can be malformed (overlong forms, surrogates, past
// U+10FFFF, truncated, stray continuation bytes), the control characters (C0 with NUL, DEL,
// C1) and the path forms ('/' first, '.' and '..' segments); and the quoting of refused ids.
#include <gtest/gtest.h>

#include <string>

#include "graph/document_id.h"

namespace sluice {
namespace {

using namespace std::string_literals;

bool valid(const std::string& id) { return !document_id_problem(id).has_value(); }
std::string why(const std::string& id) { return document_id_problem(id).value_or("(valid)"); }

TEST(DocumentId, OrdinaryIdsAreValid) {
  for (const std::string id :
       {"guide.md", "docs/guide.md", "a b.txt", "a\\b", ".profile", "...", "..x", "x..", "a//b", "a/", "MED-10", "42",
        "\xC3\xB1", "\xE6\x97\xA5\xE6\x9C\xAC/\xE6\x96\x87.md", "\xF0\x9F\x98\x80", "\xC2\xA0", "\xF4\x8F\xBF\xBF"}) {
    EXPECT_TRUE(valid(id)) << id << ": " << why(id);
  }
}

TEST(DocumentId, AtMost512Bytes) {
  EXPECT_TRUE(valid(std::string(512, 'a')));
  EXPECT_EQ(why(std::string(513, 'a')), "it is 513 bytes, over the limit of 512");
  EXPECT_EQ(why(std::string(500 << 10, 'a')), "it is 512000 bytes, over the limit of 512");
  // Multi-byte characters ending on the limit, and one byte past it: bytes count, not characters.
  EXPECT_TRUE(valid(std::string(510, 'a') + "\xC3\xA9"));          // U+00E9, 2 bytes: 512
  EXPECT_TRUE(valid(std::string(509, 'a') + "\xE2\x82\xAC"));      // U+20AC, 3 bytes: 512
  EXPECT_TRUE(valid(std::string(508, 'a') + "\xF0\x9F\x98\x80"));  // U+1F600, 4 bytes: 512
  EXPECT_FALSE(valid(std::string(511, 'a') + "\xC3\xA9"));
  EXPECT_FALSE(valid(std::string(510, 'a') + "\xE2\x82\xAC"));
  EXPECT_FALSE(valid(std::string(509, 'a') + "\xF0\x9F\x98\x80"));
}

TEST(DocumentId, EmptyIsRefused) { EXPECT_EQ(why(""), "it is empty"); }

TEST(DocumentId, MalformedUtf8IsRefusedWithTheByteAndItsOffset) {
  struct Case {
    std::string id;
    const char* says;
  };
  for (const Case& c : {
           Case{"\xC0\xAF", "byte 0xC0 at offset 0"},              // overlong '/' (2 bytes)
           Case{"\xC1\xBF", "byte 0xC1 at offset 0"},              // overlong U+007F
           Case{"a\xE0\x80\xAF", "byte 0xE0 at offset 1"},         // overlong '/' (3 bytes)
           Case{"\xE0\x9F\xBF", "byte 0xE0 at offset 0"},          // overlong U+07FF
           Case{"\xF0\x80\x80\xAF", "byte 0xF0 at offset 0"},      // overlong '/' (4 bytes)
           Case{"\xF0\x8F\xBF\xBF", "byte 0xF0 at offset 0"},      // overlong U+FFFF
           Case{"\xED\xA0\x80", "byte 0xED at offset 0"},          // U+D800, a high surrogate
           Case{"x\xED\xBF\xBF", "byte 0xED at offset 1"},         // U+DFFF, a low surrogate
           Case{"\xED\xA0\xBD\xED\xB8\x80", "byte 0xED at offset 0"},  // a surrogate pair (CESU-8)
           Case{"\xF4\x90\x80\x80", "byte 0xF4 at offset 0"},      // U+110000
           Case{"\xF5\x80\x80\x80", "byte 0xF5 at offset 0"},
           Case{"\xFF", "byte 0xFF at offset 0"},
           Case{"ab\x80", "byte 0x80 at offset 2"},                // a stray continuation byte
           Case{"\xE2\x82", "byte 0xE2 at offset 0"},              // truncated at the end
           Case{"\xE2\x82x", "byte 0xE2 at offset 0"},             // truncated inside
           Case{"\xC3\xA9\xC3", "byte 0xC3 at offset 2"},
       }) {
    EXPECT_EQ(why(c.id), "it is not valid UTF-8 ("s + c.says + ")") << testing::PrintToString(c.id);
  }
}

TEST(DocumentId, ControlCharactersAreRefused) {
  EXPECT_EQ(why("a\0b"s), "it contains the control character U+0000 at byte 1");
  EXPECT_EQ(why("\0"s), "it contains the control character U+0000 at byte 0");
  EXPECT_EQ(why("a\tb"), "it contains the control character U+0009 at byte 1");
  EXPECT_EQ(why("a\nb"), "it contains the control character U+000A at byte 1");
  EXPECT_EQ(why("a\rb"), "it contains the control character U+000D at byte 1");
  EXPECT_EQ(why("\x1B[31m"), "it contains the control character U+001B at byte 0");
  EXPECT_EQ(why("x\x1F"), "it contains the control character U+001F at byte 1");
  EXPECT_EQ(why("x\x7F"), "it contains the control character U+007F at byte 1");
  EXPECT_EQ(why("\xC2\x80"), "it contains the control character U+0080 at byte 0");
  EXPECT_EQ(why("ab\xC2\x85"), "it contains the control character U+0085 at byte 2");
  EXPECT_EQ(why("\xC2\x9F"), "it contains the control character U+009F at byte 0");
  EXPECT_TRUE(valid("\xC2\xA0"));  // U+00A0, the first character after C1
  EXPECT_TRUE(valid(" "));
}

TEST(DocumentId, AbsolutePathsAndDotSegmentsAreRefused) {
  for (const std::string id : {"/etc/passwd", "/", "//x"}) {
    EXPECT_EQ(why(id), "it starts with '/'; an id is a relative name, not an absolute path") << id;
  }
  for (const std::string id : {"..", "../x", "a/../b", "a/..", "a//../b"}) {
    EXPECT_EQ(why(id), "it has a '..' path segment, which steps out of the directory it is relative to") << id;
  }
  for (const std::string id : {".", "./a", "a/./b", "a/."}) {
    EXPECT_EQ(why(id), "it has a '.' path segment; write the id without it") << id;
  }
}

TEST(DocumentId, QuotingEscapesWhatIsNotPrintable) {
  EXPECT_EQ(quote_document_id("guide.md"), "\"guide.md\"");
  EXPECT_EQ(quote_document_id("a\0b"s), "\"a\\u0000b\"");
  EXPECT_EQ(quote_document_id("say \"hi\\\""), "\"say \\\"hi\\\\\\\"\"");
  EXPECT_EQ(quote_document_id("\x1B[2J\x7F"), "\"\\u001B[2J\\u007F\"");
  EXPECT_EQ(quote_document_id("\xC2\x85"), "\"\\u0085\"");
  EXPECT_EQ(quote_document_id("\xC3\xA9t\xC3\xA9"), "\"\xC3\xA9t\xC3\xA9\"");
  EXPECT_EQ(quote_document_id("a\xFF\xC0\xAF"), "\"a\\xFF\\xC0\\xAF\"");
  EXPECT_EQ(quote_document_id("\xED\xA0\x80"), "\"\\xED\\xA0\\x80\"");
  EXPECT_EQ(quote_document_id(""), "\"\"");
}

TEST(DocumentId, QuotingCutsLongIdsAtACharacterBoundary) {
  EXPECT_EQ(quote_document_id(std::string(64, 'a')), "\"" + std::string(64, 'a') + "\"");
  EXPECT_EQ(quote_document_id(std::string(500 << 10, 'a')), "\"" + std::string(64, 'a') + "...\" (512000 bytes)");
  // A two-byte character across the 64th byte is shown whole, never split.
  EXPECT_EQ(quote_document_id(std::string(63, 'a') + "\xC3\xA9" + "zz"), "\"" + std::string(63, 'a') + "\xC3\xA9...\" (67 bytes)");
}

}  // namespace
}  // namespace sluice
