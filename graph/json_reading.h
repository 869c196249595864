// Reading untrusted JSON with errors that name the place: the pieces the HTTP bodies
// (connectors/http/json_body.h) and the Kafka job records (connectors/kafka/job_codec.h) share.
//  - json_too_deep: where a text nests deeper than a limit, found before parsing, so a hostile
//    input cannot exhaust the parser's stack;
//  - json_nul_byte: where a text holds a NUL byte, which nlohmann's lexer reads as the end of
//    the input (so `{"a":1}\0junk` would parse as `{"a":1}`); no JSON text holds a raw NUL;
//  - json_member_text, json_minified: a member's text cut out of a document the parser has
//    accepted, and that text without the whitespace between its tokens, so a caller that only
//    needed the tree to check the document can pass the member on as written (its members in
//    their order) instead of writing the tree out again;
//  - JsonPath: follows nlohmann's parser events to name the value being read
//    ("body.messages[0].content"), so a number the parser cannot hold (1e400) is reported with
//    its field; bounded by the depth check (one frame per level);
//  - strip_json_exception_id, json_type_name: the words of the messages.
// On its own (like sluice_citation) so the job codec, which needs no graph, can use it.
// Thread-safety: pure functions; a JsonPath is used by one parse.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace sluice {

// The byte offset of the bracket that first nests deeper than `limit`; nullopt when none does.
std::optional<std::size_t> json_too_deep(std::string_view text, int limit);

// The byte offset of the first NUL in `text`; nullopt when there is none. Checked before
// parsing untrusted text: JSON has no raw NUL (inside a string it is written \u0000), and the
// parser would otherwise accept whatever precedes it and drop the rest without a word.
std::optional<std::size_t> json_nul_byte(std::string_view text);

// The text of the value of member `key` of the object `document` is (the last such member, as
// the parser keeps the last of duplicates); nullopt when it has none. `document` must be JSON
// the parser accepted and an object: this scans it without checking it. Keys written with
// escapes ("b\u006fdy") match their meaning.
std::optional<std::string_view> json_member_text(std::string_view document, std::string_view key);

// `text` (JSON the parser accepted) with the whitespace between its tokens removed; strings,
// numbers and the order of members are kept byte for byte.
std::string json_minified(std::string_view text);

// Drops nlohmann's "[json.exception.parse_error.101] " prefix; keeps "parse error at line L,
// column C: ..." or "number overflow parsing '1e400'".
std::string strip_json_exception_id(std::string what);

// "null", "a boolean", "a string", "an array", "an object", "an integer", "a number".
std::string_view json_type_name(const nlohmann::json& v);

class JsonPath {
 public:
  explicit JsonPath(std::string prefix = {}) : prefix_(std::move(prefix)) {}
  void on_event(nlohmann::json::parse_event_t event, const nlohmann::json& parsed);
  // The path of the value being read now: the prefix ("" at the top level without one).
  std::string current() const;

 private:
  struct Frame {
    bool array;
    std::string key;    // objects: the key whose value is being read
    std::size_t index;  // arrays: the element being read
  };
  void finished_value() {
    if (!frames_.empty() && frames_.back().array) ++frames_.back().index;
  }
  std::string prefix_;
  std::vector<Frame> frames_;
};

}  // namespace sluice
