// graph/utf8.h: well-formed UTF-8 at the edges of RFC 3629's table 3-7, and the repair that
// replaces each byte outside a well-formed sequence with U+FFFD.
#include "graph/utf8.h"

#include <gtest/gtest.h>

#include <string>

namespace sluice {
namespace {

TEST(Utf8, WellFormedSequencesAtTheTableEdges) {
  struct Case {
    std::string bytes;
    std::size_t length;
    char32_t value;
  };
  const Case cases[] = {
      {"A", 1, U'A'},
      {"\x7F", 1, 0x7F},
      {"\xC2\x80", 2, 0x80},
      {"\xDF\xBF", 2, 0x7FF},
      {"\xE0\xA0\x80", 3, 0x800},
      {"\xED\x9F\xBF", 3, 0xD7FF},        // the last before the surrogates
      {"\xEE\x80\x80", 3, 0xE000},        // the first after them
      {"\xEF\xBF\xBF", 3, 0xFFFF},
      {"\xF0\x90\x80\x80", 4, 0x10000},
      {"\xF4\x8F\xBF\xBF", 4, 0x10FFFF},
  };
  for (const Case& c : cases) {
    const Utf8CodePoint cp = utf8_decode_at(c.bytes, 0);
    EXPECT_EQ(cp.length, c.length) << c.bytes;
    EXPECT_EQ(cp.value, c.value) << c.bytes;
    EXPECT_EQ(utf8_sequence(c.bytes, 0), c.length);
  }
}

TEST(Utf8, OverlongSurrogatesPastTheRangeAndCutSequencesAreNot) {
  for (const std::string bytes : {"\x80", "\xBF", "\xC0\x80", "\xC1\xBF", "\xE0\x9F\xBF", "\xED\xA0\x80", "\xED\xBF\xBF",
                                  "\xF0\x8F\xBF\xBF", "\xF4\x90\x80\x80", "\xF5\x80\x80\x80", "\xFF", "\xC3", "\xE2\x82",
                                  "\xF0\x9F\x98", "\xC3\x28"}) {
    EXPECT_EQ(utf8_sequence(bytes, 0), 0u) << testing::PrintToString(bytes);
  }
}

TEST(Utf8, RepairReplacesEachBadByteAndKeepsTheRest) {
  EXPECT_EQ(valid_utf8("caf\xC3\xA9 \xF0\x9F\x98\x80"), "caf\xC3\xA9 \xF0\x9F\x98\x80");
  EXPECT_EQ(valid_utf8("a\xFF" "b"), "a\xEF\xBF\xBD" "b");
  EXPECT_EQ(valid_utf8("\xE2\x82"), "\xEF\xBF\xBD\xEF\xBF\xBD") << "a cut sequence: each byte replaced";
  EXPECT_EQ(valid_utf8("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD") << "a surrogate";
  EXPECT_EQ(valid_utf8(""), "");
}

}  // namespace
}  // namespace sluice
