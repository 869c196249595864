// JsonGrammar: a JSON Schema compiled, once, into the node table the matcher (json_matcher.h)
// walks byte by byte while the model writes. It is what structured outputs
// (response_format json_object / json_schema) and tool calls constrain decoding to.
//
// The supported subset is OpenAI's strict mode: `type` (one name or a list), objects with
// `properties` / `required` / `additionalProperties`, arrays with `items` / `minItems` /
// `maxItems`, strings with `minLength` / `maxLength`, numbers, integers, booleans, null,
// `enum`, `const`, `anyOf`, local `$ref` into `$defs` / `definitions` (recursion allowed), and
// integers with `minimum` / `maximum` / `exclusiveMinimum` / `exclusiveMaximum` (what zod's
// .int() writes), the annotations (`title`, `description`, `default`, `examples`, `$schema`, `$id`,
// `$comment`). Any other keyword (`pattern`, `format`, `minimum`, `oneOf`, `allOf`, ...) is
// refused by name (bounds on non-integer numbers too): compile() returns the JSON path and the keyword, which the HTTP layer
// answers with 400.
//
// What the grammar writes, by rule (docs/generation.md "Structured outputs"):
//  - an object writes every property it lists, in schema order (strict mode requires them
//    all; writing an optional one is still valid), in the order the schema lists them; an object without `properties` (and not
//    `additionalProperties: false`) takes any keys with any values;
//  - no whitespace except one optional space after `:` and after `,`;
//  - numbers at most 24 characters, exponents at most two digits (every value fits a double); values nest at most kMaxDepth deep.
// A schema whose every instance is infinite (a required self-reference) is refused.
//
// Immutable after compile(): share it between threads and requests (grammar_cache.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace sluice::constrain {

enum class NodeKind : std::uint8_t { kAnyOf, kLiteral, kString, kNumber, kInteger, kObject, kFreeObject, kArray };

inline constexpr std::uint32_t kUnbounded = 0xffffffffu;
inline constexpr std::uint32_t kInfinite = 1u << 30;  // min_bytes of a value with no finite instance
// Byte counts that saturate at kInfinite (a sum or product with no finite instance stays so).
inline std::uint32_t add_bytes(std::uint32_t a, std::uint32_t b) {
  const std::uint64_t s = std::uint64_t(a) + b;
  return s < kInfinite ? std::uint32_t(s) : kInfinite;
}
inline std::uint32_t multiply_bytes(std::uint32_t a, std::uint32_t b) {
  const std::uint64_t p = std::uint64_t(a) * b;
  return p < kInfinite ? std::uint32_t(p) : kInfinite;
}

struct GrammarNode {
  NodeKind kind = NodeKind::kAnyOf;
  // kAnyOf: the alternatives; kObject: each property's value; kArray: {item};
  // kFreeObject: {value, key string}.
  std::vector<std::uint32_t> children;
  std::string literal;                 // kLiteral: the exact bytes
  std::vector<std::string> prefixes;   // kObject: per property `"key":`, with a leading ',' after the first
  std::vector<std::uint32_t> suffix;   // kObject: min bytes from property i to the closing brace (size n+1)
  std::uint32_t min_count = 0;         // kArray: minItems; kString: minLength (characters)
  std::uint32_t max_count = kUnbounded;
  // kInteger with minimum / maximum (exclusive ones made inclusive): the value's range.
  bool bounded = false;
  std::int64_t min_value = 0, max_value = 0;
  std::uint32_t min_bytes = kInfinite; // the shortest text this value can be
  std::uint8_t first[32] = {};         // bit set of the bytes this value can start with
  bool can_start_with(std::uint8_t c) const { return (first[c >> 3] >> (c & 7)) & 1; }
};

// Integer ranges: magnitudes stay below 10^18 so every candidate fits an int64.
inline constexpr std::int64_t kMaxMagnitude = 999'999'999'999'999'999;
// Whether an integer written so far as sign `negative` and magnitude `m` (m == 0 only for a
// lone "0": nothing may follow) can still end inside [lo, hi] with up to `more_digits` further
// digits; *fewest gets the fewest further digits that do.
bool integer_reachable(bool negative, std::int64_t m, int more_digits, std::int64_t lo, std::int64_t hi, int* fewest);
// Digits of a magnitude (1 for 0).
int decimal_digits(std::int64_t m);

struct GrammarError {
  std::string path;     // where in the schema, e.g. "schema.properties.age"
  std::string message;  // names the keyword and the problem
};

class JsonGrammar {
 public:
  static constexpr int kMaxDepth = 32;      // nested values in one answer
  static constexpr int kMaxNodes = 20000;   // compiled nodes per schema
  static constexpr int kMaxNumberBytes = 24;

  // Compiles `schema`; on failure returns null and fills *error. `path` names the schema in
  // errors (e.g. "response_format.json_schema.schema").
  static std::shared_ptr<const JsonGrammar> compile(const nlohmann::ordered_json& schema, const std::string& path,
                                                    GrammarError* error);
  // Any JSON object (response_format json_object).
  static std::shared_ptr<const JsonGrammar> any_object();

  const GrammarNode& node(std::uint32_t id) const { return nodes_[id]; }
  std::uint32_t root() const { return 0; }
  std::uint32_t min_bytes() const { return nodes_[0].min_bytes; }  // the shortest answer
  std::size_t size() const { return nodes_.size(); }

 private:
  friend class GrammarBuilder;
  std::vector<GrammarNode> nodes_;
};

}  // namespace sluice::constrain
