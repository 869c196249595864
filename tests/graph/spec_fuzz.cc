// libFuzzer target for pipeline files (graph/spec_loader.h, graph/spec_validator.h), run by
// scripts/fuzz. Byte 0 picks the format (byte % 3: p.yaml, p.json, p.textproto), the rest is
// the file. It runs the two halves of load_and_validate_text: load_spec_text_partial, which
// returns a spec and its field-level problems or throws SpecErrors on a syntax error, then
// validate_spec on what loaded. Only SpecErrors are caught: anything else that escapes crashes
// the fuzzer, as do crashes, hangs and out-of-bounds reads (ASan+UBSan). Besides:
//  - errors (thrown or returned) each name the file and say something;
//  - a spec the loader took without a problem holds only values the schema allows, whatever
//    the format and whatever the validator later says about the graph: each ranged number the
//    file wrote is inside its range (NaN is not), each duration is non-negative and normalised
//    (nanos in [0, 1e9)). Checking this before validation, not only on specs that validate,
//    matters: few mutated files make a whole valid pipeline, many keep the loader happy.
// Byte-level mutations seldom keep a pipeline file loadable while changing one of its values
// (most break the syntax), so a custom mutator, half the time, swaps one number of the file (with
// its unit: "250ms", "0.9", "4096") for a boundary value ("nan", "-1", "1e400", 2^32, 2^63-1 ns,
// ...); the other half are libFuzzer's own mutations (with the dictionary, spec.dict).
// The environment is a fixed lookup (PORT, EMPTY, SLUICE_LISTEN, SLUICE_KB, SLUICE_MODEL, and
// QUOTE with YAML and text-format punctuation); the node kinds are the builtin ones without
// their factories (fuzz_node_kinds.h). SPEC_FUZZ_VERBOSE=1 prints what each input loaded to or
// the errors (to see which seeds load: spec_fuzz -runs=1 SEED...).
#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "graph/schema.h"
#include "graph/spec_loader.h"
#include "graph/spec_validator.h"
#include "tests/graph/fuzz_node_kinds.h"
#include "tests/support/fuzz_check.h"

namespace {

using namespace sluice;
namespace pb = google::protobuf;

std::optional<std::string> fuzz_env(const std::string& name) {
  if (name == "PORT") return "9999";
  if (name == "EMPTY") return "";
  if (name == "SLUICE_LISTEN") return "127.0.0.1:0";
  if (name == "SLUICE_KB") return "kb";
  if (name == "SLUICE_MODEL") return "model.gguf";
  if (name == "QUOTE") return "\"} ]: ${PORT} $$ #\n";
  return std::nullopt;
}

void check_errors(const std::vector<SpecError>& errors, const std::string& path) {
  for (const SpecError& e : errors) {
    FUZZ_CHECK(e.file == path);
    FUZZ_CHECK(!e.message.empty());
    FUZZ_CHECK(e.pos.line >= 0 && e.pos.column >= 0);
  }
}

double number_at(const pb::Message& msg, const pb::FieldDescriptor* fd, int j) {
  const pb::Reflection* r = msg.GetReflection();
  const bool rep = fd->is_repeated();
  switch (fd->cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_INT32: return rep ? r->GetRepeatedInt32(msg, fd, j) : r->GetInt32(msg, fd);
    case pb::FieldDescriptor::CPPTYPE_INT64:
      return static_cast<double>(rep ? r->GetRepeatedInt64(msg, fd, j) : r->GetInt64(msg, fd));
    case pb::FieldDescriptor::CPPTYPE_UINT32: return rep ? r->GetRepeatedUInt32(msg, fd, j) : r->GetUInt32(msg, fd);
    case pb::FieldDescriptor::CPPTYPE_UINT64:
      return static_cast<double>(rep ? r->GetRepeatedUInt64(msg, fd, j) : r->GetUInt64(msg, fd));
    case pb::FieldDescriptor::CPPTYPE_FLOAT: return rep ? r->GetRepeatedFloat(msg, fd, j) : r->GetFloat(msg, fd);
    case pb::FieldDescriptor::CPPTYPE_DOUBLE: return rep ? r->GetRepeatedDouble(msg, fd, j) : r->GetDouble(msg, fd);
    default: return 0;
  }
}

void check_duration(const pb::Message& d, const std::string& at) {
  const pb::Reflection* r = d.GetReflection();
  const std::int64_t seconds = r->GetInt64(d, d.GetDescriptor()->FindFieldByName("seconds"));
  const std::int32_t nanos = r->GetInt32(d, d.GetDescriptor()->FindFieldByName("nanos"));
  if (seconds < 0 || nanos < 0 || nanos >= 1'000'000'000) {
    std::fprintf(stderr, "%s loaded as a duration of %lld s %d ns\n", at.c_str(), static_cast<long long>(seconds), nanos);
    FUZZ_CHECK(!"a loaded duration is non-negative and normalised");
  }
}

// Walks the loaded spec with the loader's field paths (a config member is "config").
void check_values(const pb::Message& msg, const std::string& path, const LoadedSpec& spec) {
  const pb::Descriptor* d = msg.GetDescriptor();
  const pb::Reflection* r = msg.GetReflection();
  const pb::OneofDescriptor* config = d->FindOneofByName("config");
  for (int i = 0; i < d->field_count(); ++i) {
    const pb::FieldDescriptor* fd = d->field(i);
    const bool in_config = config && fd->containing_oneof() == config;
    const std::string child = (path.empty() ? "" : path + ".") + (in_config ? "config" : fd->name());
    const int n = fd->is_repeated() ? r->FieldSize(msg, fd) : 1;
    if (fd->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
      if (!fd->is_repeated() && !r->HasField(msg, fd)) continue;
      for (int j = 0; j < n; ++j) {
        const pb::Message& sub = fd->is_repeated() ? r->GetRepeatedMessage(msg, fd, j) : r->GetMessage(msg, fd);
        const std::string at = fd->is_repeated() ? child + "[" + std::to_string(j) + "]" : child;
        if (fd->message_type()->full_name() == "google.protobuf.Duration") {
          check_duration(sub, at);
        } else {
          check_values(sub, at, spec);
        }
      }
      continue;
    }
    const FieldRules& rules = fd->options().GetExtension(sluice::v1::rules);
    if (!rules.has_range()) continue;
    for (int j = 0; j < n; ++j) {
      const double v = number_at(msg, fd, j);
      if (v >= rules.min() && v <= rules.max()) continue;
      // A field the file left out that has no default holds 0, the component's "unset".
      if (!fd->is_repeated() && v == 0 && !spec.positions.has(child)) continue;
      std::fprintf(stderr, "%s loaded as %.17g, outside its range [%g, %g]\n", child.c_str(), v, rules.min(), rules.max());
      FUZZ_CHECK(!"a loaded number is inside its range");
    }
  }
}

bool is_word_char(unsigned char c) { return std::isalnum(c) || c == '_' || c == '$' || c == '{'; }

// The spans of the numbers in `text` (a digit or '.' starting a token, then digits, letters,
// '.', '+', '-': "250ms", "0.9", "1e-3", "127.0.0.1"), not counting digits inside words ("P1").
std::vector<std::pair<std::size_t, std::size_t>> numbers_in(std::string_view text) {
  std::vector<std::pair<std::size_t, std::size_t>> spans;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (!(std::isdigit(c) || c == '.') || (i > 0 && is_word_char(static_cast<unsigned char>(text[i - 1])))) continue;
    std::size_t end = i + 1;
    while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) || std::strchr(".+-", text[end]))) ++end;
    if (std::isdigit(c) || (end > i + 1 && std::isdigit(static_cast<unsigned char>(text[i + 1])))) spans.emplace_back(i, end);
    i = end;
  }
  return spans;
}

}  // namespace

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  static constexpr std::string_view kBoundaries[] = {
      "0", "-1", "-0", "0.5", "1", "nan", "-nan", "inf", "-inf", "1e400", "1e-400", "4294967295", "4294967296",
      "2147483648", "9223372036854775807", "9223372036854775808", "18446744073709551615", "18446744073709551616",
      "1e19", "99999999999", "0x10", "9223372036854775807ns", "9223372036854775808ns", "18446744073709551615ns",
      "106751d", "-5s", "0.0000000001ns", "1.5ns", "1e3s", "2562047h", "153722867m", "9223372036s",
      "18446744073709551615B", "17179869184GiB", "1.5B", "-1KiB"};
  std::minstd_rand rng(seed);
  if (size > 1 && rng() % 2 == 0) {
    std::string text(reinterpret_cast<const char*>(data), size);
    auto spans = numbers_in(std::string_view(text).substr(1));  // byte 0 is the format
    if (!spans.empty()) {
      auto [begin, end] = spans[rng() % spans.size()];
      text.replace(begin + 1, end - begin, kBoundaries[rng() % std::size(kBoundaries)]);
      if (text.size() <= max_size) {
        std::memcpy(data, text.data(), text.size());
        return text.size();
      }
    }
  }
  return LLVMFuzzerMutate(data, size, max_size);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const char* const kPaths[] = {"p.yaml", "p.json", "p.textproto"};
  static const NodeRegistry registry = testing::builtin_kinds_without_factories();
  static const EnvLookup env = fuzz_env;
  const std::string path = kPaths[data[0] % 3];
  static const bool verbose = std::getenv("SPEC_FUZZ_VERBOSE") != nullptr;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::vector<SpecError> problems;
  LoadedSpec spec;
  try {
    spec = load_spec_text_partial(text, path, env, &problems);
  } catch (const SpecErrors& e) {
    if (verbose) std::fprintf(stderr, "%s: %s\n", path.c_str(), e.what());
    FUZZ_CHECK(!e.errors().empty());
    check_errors(e.errors(), path);
    return 0;
  }
  std::vector<SpecError> invalid = validate_spec(spec, registry);
  if (verbose) {
    std::fprintf(stderr, "%s: loaded '%s', %zu loader problems, %zu validation errors\n", path.c_str(),
                 spec.pipeline.name().c_str(), problems.size(), invalid.size());
    for (const auto& e : problems) std::fprintf(stderr, "  %s\n", e.to_string().c_str());
    for (const auto& e : invalid) std::fprintf(stderr, "  %s\n", e.to_string().c_str());
  }
  check_errors(problems, path);
  check_errors(invalid, path);
  if (problems.empty()) check_values(spec.pipeline, "", spec);
  return 0;
}
