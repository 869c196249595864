// Tokenizer: merges by score, byte fallback for characters outside the vocabulary, the
// leading-space rule, round trips, refusal of GPT-2 BPE; and TextStream's UTF-8 and stop rules.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "inference/gguf/gguf_file.h"
#include "inference/tokenize/text_stream.h"
#include "inference/tokenize/tokenizer.h"
#include "tests/support/test_models.h"

namespace sluice::inference {
namespace {

class TinyTokenizer : public ::testing::Test {
 protected:
  void SetUp() override {
    bytes_ = testing::tiny_llama_writer().serialize();
    file_ = GgufFile::parse("tiny.gguf", bytes_.data(), bytes_.size());
    tok_ = std::make_unique<Tokenizer>(*file_);
  }
  int32_t id(const std::string& raw) const {
    for (int32_t i = 0; i < tok_->vocab_size(); ++i)
      if (file_->get_array("tokenizer.ggml.tokens", GgufType::kString).strings[size_t(i)] == raw) return i;
    return -1;
  }
  std::vector<uint8_t> bytes_;
  std::unique_ptr<GgufFile> file_;
  std::unique_ptr<Tokenizer> tok_;
};

TEST_F(TinyTokenizer, MergesByScoreWithLeadingSpace) {
  // "hello" -> "▁hello" (one piece, reached through ▁h/he -> ▁he, ll, llo -> ▁hello).
  EXPECT_EQ(tok_->encode("hello", true), (std::vector<int32_t>{1, id("\xE2\x96\x81hello")}));
  EXPECT_EQ(tok_->encode("", true), (std::vector<int32_t>{1}));
  EXPECT_EQ(tok_->encode("", false), (std::vector<int32_t>{}));
}

TEST_F(TinyTokenizer, ByteFallbackAndRoundTrip) {
  // 'z' and the emoji are not pieces: they fall back to their UTF-8 bytes; 'é' is a piece.
  const std::string text = "hello z\xF0\x9F\x99\x82 \xC3\xA9h";
  const auto ids = tok_->encode(text, false);
  EXPECT_THAT(ids, ::testing::Contains(id("<0x7A>")));
  EXPECT_THAT(ids, ::testing::Contains(id("<0xF0>")));
  EXPECT_THAT(ids, ::testing::Contains(id("\xC3\xA9")));
  EXPECT_EQ(tok_->decode(ids), text);
}

TEST_F(TinyTokenizer, PieceAfterBosDropsLeadingSpace) {
  const int32_t hello = id("\xE2\x96\x81hello");
  EXPECT_EQ(tok_->piece(1, hello), "hello");
  EXPECT_EQ(tok_->piece(hello, hello), " hello");
  EXPECT_EQ(tok_->piece(hello, 1), "");  // control tokens print nothing
}

TEST(Tokenizer, RefusesGpt2ByteLevelBpe) {
  GgufWriter w;
  w.add_string("tokenizer.ggml.model", "gpt2");
  const auto b = w.serialize();
  const auto f = GgufFile::parse("q.gguf", b.data(), b.size());
  try {
    Tokenizer t(*f);
    FAIL();
  } catch (const ModelError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("q.gguf: metadata 'tokenizer.ggml.model': GPT-2 byte-level BPE"));
  }
}

TEST(Tokenizer, Stories260KRoundTrips) {
  const std::string path = testing::shared_model("stories260K.gguf");
  SLUICE_REQUIRE_SHARED(path);
  const auto f = GgufFile::open(path);
  const Tokenizer tok(*f);
  for (const std::string text : {"Once upon a time, there was a little girl named Lily.", "  two  spaces",
                                 "caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x98\x80!", "line\nbreak\ttab"}) {
    const auto ids = tok.encode(text, true);
    EXPECT_EQ(ids.front(), 1);
    EXPECT_EQ(tok.decode(std::vector<int32_t>(ids.begin() + 1, ids.end())), text);
  }
  // Merges happen: far fewer tokens than characters for ordinary text.
  EXPECT_LT(tok.encode("Once upon a time, there was a little girl named Lily.", false).size(), 25u);
}

std::vector<std::string> stream_events(const std::vector<std::string>& pieces, std::vector<std::string> stop,
                                       bool* stopped = nullptr) {
  std::vector<std::string> events;
  TextStream s(std::move(stop), [&](std::string_view t) { events.emplace_back(t); });
  bool hit = false;
  for (const auto& p : pieces)
    if ((hit = s.push(p))) break;
  s.finish();
  if (stopped) *stopped = hit;
  return events;
}

TEST(TextStream, NeverSplitsAUtf8Character) {
  // A 4-byte emoji arriving one byte per token comes out as one event.
  const auto ev = stream_events({"a", "\xF0", "\x9F", "\x98", "\x80", "b"}, {});
  EXPECT_EQ(ev, (std::vector<std::string>{"a", "\xF0\x9F\x98\x80", "b"}));
}

TEST(TextStream, MalformedBytesBecomeReplacementCharacters) {
  const auto ev = stream_events({"\xFF", "x", "\xE6\x97"}, {});  // bad lead; truncated at end
  std::string all;
  for (const auto& e : ev) all += e;
  EXPECT_EQ(all, "\xEF\xBF\xBDx\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(TextStream, StopStringAcrossPiecesIsNeverEmitted) {
  bool stopped = false;
  const auto ev = stream_events({"Hello", " wor", "ld! More"}, {"world"}, &stopped);
  std::string all;
  for (const auto& e : ev) all += e;
  EXPECT_TRUE(stopped);
  EXPECT_EQ(all, "Hello ");
  // A held-back prefix that turns out not to be a stop string is emitted later.
  const auto ev2 = stream_events({"Hello", " wor", "m"}, {"world"});
  std::string all2;
  for (const auto& e : ev2) all2 += e;
  EXPECT_EQ(all2, "Hello worm");
}

}  // namespace
}  // namespace sluice::inference
