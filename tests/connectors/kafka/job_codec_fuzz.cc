// libFuzzer target for the job record codec (connectors/kafka/job_codec.h; run by scripts/fuzz):
// each input is a Kafka record's value, decoded with and without a key. Nothing here catches
// what the codec might throw: an escaping exception crashes the fuzzer, which is the point.
// Besides:
//  - a refusal has a known code and a non-empty message of valid UTF-8;
//  - a decoded job has an id and a body that is a JSON object, and encode_job then decode_job,
//    read from another topic, offset and key (a retry record), gives the same job back;
//  - results (ok and failed) and dead letters, given the input's bytes as every string they
//    carry, are valid JSON (UTF-8 included) in the job's JSON encoding and parse as
//    sluice.jobs.v1 messages in its protobuf one; a dead letter's original_base64 decodes to the
//    input exactly, and the protobuf DeadLetter keeps it exactly.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include <google/protobuf/stubs/logging.h>

#include "connectors/kafka/job_codec.h"
#include "graph/json_reading.h"
#include "sluice/jobs.pb.h"
#include "tests/support/fuzz_check.h"

namespace {

using namespace sluice::kafka;
using nlohmann::json;
using sluice::json_too_deep;
using sluice::fuzzing::is_utf8;
using sluice::fuzzing::must_parse;
namespace pb = sluice::jobs::v1;

std::string unbase64(const std::string& text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  FUZZ_CHECK(text.size() % 4 == 0);
  std::string out;
  for (std::size_t i = 0; i < text.size(); i += 4) {
    std::uint32_t v = 0;
    int pad = 0;
    for (std::size_t k = 0; k < 4; ++k) {
      const char c = text[i + k];
      if (c == '=') {
        FUZZ_CHECK(i + 4 == text.size() && k >= 2);
        ++pad;
        v <<= 6;
        continue;
      }
      FUZZ_CHECK(pad == 0 && value(c) >= 0);
      v = v << 6 | static_cast<std::uint32_t>(value(c));
    }
    out += static_cast<char>(v >> 16 & 0xFF);
    if (pad < 2) out += static_cast<char>(v >> 8 & 0xFF);
    if (pad < 1) out += static_cast<char>(v & 0xFF);
  }
  return out;
}

void check_same(const Job& a, const Job& b) {
  FUZZ_CHECK(a.id == b.id);
  FUZZ_CHECK(a.custom_id == b.custom_id);
  FUZZ_CHECK(a.endpoint == b.endpoint);
  FUZZ_CHECK(a.body == b.body);
  FUZZ_CHECK(a.priority == b.priority);
  FUZZ_CHECK(a.attempt == b.attempt);
  FUZZ_CHECK(a.not_before_unix_ms == b.not_before_unix_ms);
  FUZZ_CHECK(a.deadline_unix_ms == b.deadline_unix_ms);
  FUZZ_CHECK(a.traceparent == b.traceparent);
  FUZZ_CHECK(a.encoding == b.encoding);
  FUZZ_CHECK(a.errors.size() == b.errors.size());
  for (std::size_t i = 0; i < a.errors.size(); ++i) {
    FUZZ_CHECK(a.errors[i].code == b.errors[i].code);
    FUZZ_CHECK(a.errors[i].message == b.errors[i].message);
    FUZZ_CHECK(a.errors[i].status == b.errors[i].status);
    FUZZ_CHECK(a.errors[i].attempt == b.errors[i].attempt);
    FUZZ_CHECK(a.errors[i].at_unix_ms == b.errors[i].at_unix_ms);
  }
}

void check_job(const Job& job) {
  FUZZ_CHECK(!job.id.empty() && job.id.size() <= 512 && is_utf8(job.id));
  FUZZ_CHECK(must_parse(job.body, "job body").is_object());
  const std::string record = encode_job(job);
  if (job.encoding == JobEncoding::kJson) FUZZ_CHECK(must_parse(record, "encoded job").is_object());
  const DecodedJob again = decode_job(record, RecordRef{"jobs-retry", 0, 7, "another-key"});
  if (const auto* f = std::get_if<DecodeFailure>(&again)) {
    std::fprintf(stderr, "re-encoded job refused: %s: %s\n", f->code.c_str(), f->message.c_str());
    FUZZ_CHECK(false);
  }
  check_same(std::get<Job>(again), job);
}

void check_outputs(const Job& job, std::string_view input, const DecodeFailure* refusal, const Job* decoded) {
  const std::string bytes(input);
  JobOutcome ok;
  ok.ok = true;
  ok.request_id = bytes;
  ok.body = bytes;
  ok.timings_json = bytes;
  ok.attempts = 1;
  JobOutcome failed;
  failed.error = JobError{bytes, bytes, 500, 2, 3};
  failed.attempts = 2;
  DeadLetterInput letter;
  letter.job = decoded;
  letter.encoding = job.encoding;
  letter.original = input;
  letter.source = RecordRef{input, 1, 2, input};
  letter.reason = refusal ? JobError{refusal->code, refusal->message, 400, 0, 0} : failed.error;
  letter.attempts = 2;

  if (job.encoding == JobEncoding::kJson) {
    const std::string ok_line = encode_result(job, ok);
    FUZZ_CHECK(ok_line.find_first_of("\r\n") == std::string::npos);  // a record is one line
    json r = must_parse(ok_line, "ok result");
    FUZZ_CHECK(r["response"]["status_code"] == 200 && r["error"].is_null());
    // The body is the bytes' JSON when they are JSON, else the bytes as a string.
    const json as_json = json::parse(bytes, nullptr, /*allow_exceptions=*/false);
    if (!as_json.is_discarded() && !json_too_deep(bytes, 64) && !sluice::json_nul_byte(bytes)) {
      FUZZ_CHECK(r["response"]["body"] == as_json);
      // The same JSON as the source's own result (spliced when it is one line of UTF-8): the
      // record is still one line and carries the same body.
      JobOutcome own = ok;
      own.written_by_sluice = true;
      const std::string own_line = encode_result(job, own);
      FUZZ_CHECK(own_line.find_first_of("\r\n") == std::string::npos);
      FUZZ_CHECK(must_parse(own_line, "own result")["response"]["body"] == as_json);
    }
    r = must_parse(encode_result(job, failed), "failed result");
    FUZZ_CHECK(r["response"].is_null() && r["error"]["code"].is_string());
    json d = must_parse(encode_dead_letter(letter), "dead letter");
    FUZZ_CHECK(d["original"].is_string());
    FUZZ_CHECK(unbase64(d["original_base64"].get<std::string>()) == bytes);
  } else {
    pb::JobResult r;
    FUZZ_CHECK(r.ParseFromString(encode_result(job, ok)) && r.ok());
    FUZZ_CHECK(r.ParseFromString(encode_result(job, failed)) && !r.ok());
    pb::DeadLetter d;
    FUZZ_CHECK(d.ParseFromString(encode_dead_letter(letter)));
    FUZZ_CHECK(d.original() == bytes);
  }
}

void run(std::string_view input, const RecordRef& where, bool outputs) {
  const DecodedJob d = decode_job(input, where);
  if (const auto* f = std::get_if<DecodeFailure>(&d)) {
    FUZZ_CHECK(f->code == "invalid_json" || f->code == "invalid_job" || f->code == "unknown_endpoint" ||
               f->code == "invalid_method" || f->code == "invalid_id");
    FUZZ_CHECK(!f->message.empty() && is_utf8(f->message));
    if (!outputs) return;
    // A job made of the input's bytes, as a caller could hand in: outputs stay valid.
    Job stray;
    stray.id = std::string(input);
    stray.custom_id = std::string(input);
    stray.body = std::string(input);
    for (JobEncoding e : {JobEncoding::kJson, JobEncoding::kProto}) {
      stray.encoding = e;
      check_outputs(stray, input, f, nullptr);
    }
    return;
  }
  const Job& job = std::get<Job>(d);
  // A JSON line's body is the line's "body" member, as the parser reads it, only compacted.
  if (job.encoding == JobEncoding::kJson) FUZZ_CHECK(json::parse(job.body) == json::parse(input)["body"]);
  check_job(job);
  if (outputs) check_outputs(job, input, nullptr, &job);
}

void ignore_log(google::protobuf::LogLevel, const char*, int, const std::string&) {}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Protobuf logs each string field of invalid UTF-8 it parses; that is expected here.
  google::protobuf::SetLogHandler(&ignore_log);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  // The key changes only where the id comes from: the outputs are checked once.
  run(input, RecordRef{"jobs", 3, 42, ""}, /*outputs=*/true);
  run(input, RecordRef{"jobs", 3, 42, "key-1"}, /*outputs=*/false);
  return 0;
}
