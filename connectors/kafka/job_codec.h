// Job records on Kafka: decoding a job from a record's bytes, and encoding what a worker writes
// back (a result, a retry, a dead letter), in the encoding the job came in.
//
// Two encodings (docs/kafka.md, "Job formats"):
//  - JSON: one OpenAI Batch input line per record,
//      {"custom_id": "...", "method": "POST", "url": "/v1/chat/completions", "body": {...}}
//    url one of /v1/chat/completions, /v1/completions, /v1/embeddings, /v1/retrieve; method
//    POST (absent: POST). Sluice's own optional fields ride in "x_sluice": {"priority": "P1",
//    "attempt": 2, "not_before": <unix ms>, "deadline": <unix ms>, "traceparent": "...",
//    "tenant": "...", "errors": [{"code","message","status","attempt","at"}]}; a retry record is the job's line
//    with "x_sluice" filled in, so users' lines pass through unchanged otherwise.
//  - Protobuf: sluice.jobs.v1.Job (proto/sluice/jobs.proto), serialized.
//  A record whose first byte other than JSON whitespace is '{' is JSON; anything else is read
//  as a Job message (a serialized Job never starts with '{': that is field 15 as a group).
//  [Nor with JSON whitespace followed by '{': jobs.proto numbers the fields so that no tag is
//  0x09, 0x0A, 0x0D or 0x20 (field 1 is the endpoint, a varint, tag 0x08). A record that is
//  valid JSON but not an object is refused as JSON (invalid_job), since no Job starts so.]
//
// The job id: custom_id, else the record's key, else "<topic>-<partition>-<offset>". So a
// duplicate delivery (a rebalance, a crash before the commit) carries the same id.
//
// Malformed records (not JSON and not a Job, a JSON line without the batch shape, an unknown
// url or method, a body that is not a JSON object, an id over 512 bytes) decode to a
// DecodeFailure with a code and a sentence naming the field; the worker dead-letters the
// original bytes with it. Decoding never throws and never aborts, whatever the bytes.
//
// Outputs, in the job's encoding:
//  - result: JSON, one OpenAI Batch output line
//      {"id": <job id>, "custom_id": <custom_id or null>, "response": {"status_code": 200,
//       "request_id": "...", "body": {...}}, "error": null, "x_sluice": {"attempts": N,
//       "timings": {...}, "tenant": "..." (when the job had one)}}
//    or for a job that failed for good "response": null, "error": {"code","message"};
//    Protobuf: sluice.jobs.v1.JobResult.
//  - retry: the job with attempt, not_before and errors updated (encode_job).
//  - dead letter: JSON {"id", "custom_id", "reason": {"code","message"}, "attempts",
//    "errors": [...], "source": {"topic","partition","offset"}, "original": "<the record's
//    bytes as a string, invalid UTF-8 replaced by U+FFFD>", "original_base64": "..."}
//    Protobuf: sluice.jobs.v1.DeadLetter (original bytes kept exactly).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace sluice::kafka {

enum class JobEncoding { kJson, kProto };
enum class JobEndpoint { kChatCompletions, kCompletions, kEmbeddings, kRetrieve };

// "/v1/chat/completions" for kChatCompletions, and so on.
std::string_view endpoint_url(JobEndpoint endpoint);

// One failed attempt (or the reason a record was refused).
struct JobError {
  std::string code;     // machine-readable: "overloaded", "deadline_exceeded", "invalid_value", ...
  std::string message;  // a sentence for people
  int status = 0;       // the HTTP-equivalent status (429, 504, 400, ...); 0 when none
  std::uint32_t attempt = 0;    // which attempt failed (1 = the first)
  std::int64_t at_unix_ms = 0;  // when
};

struct Job {
  std::string id;          // custom_id, else the record key, else "<topic>-<partition>-<offset>"
  std::string custom_id;   // as given; empty when none
  JobEndpoint endpoint = JobEndpoint::kChatCompletions;
  std::string body;        // the endpoint's JSON request body as the record wrote it, less the whitespace between tokens
  std::string priority;    // a class name; empty: the source's default_priority
  std::uint32_t attempt = 0;              // attempts already made (0 for a new job)
  std::int64_t not_before_unix_ms = 0;    // not to be attempted before; 0: at once
  std::int64_t deadline_unix_ms = 0;      // give up after; 0: the pipeline's default deadline
  std::string traceparent;                // W3C trace context; empty when none
  // Whose job: the tenant of the API key that queued it over HTTP (docs/operations.md,
  // "Tenants"); the request runs as that tenant and GET /v1/jobs/{id} answers only it. Empty: none.
  std::string tenant;
  std::vector<JobError> errors;           // of the attempts so far
  JobEncoding encoding = JobEncoding::kJson;
};

// Where a record came from.
struct RecordRef {
  std::string_view topic;
  std::int32_t partition = 0;
  std::int64_t offset = 0;
  std::string_view key;  // empty when the record has none
};

struct DecodeFailure {
  std::string code;     // "invalid_json", "invalid_job", "unknown_endpoint", "invalid_id", ...
  std::string message;  // names the field, e.g. "'url' \"/v2/x\" is not one of ..."
  JobEncoding encoding = JobEncoding::kJson;  // the encoding the record seemed to be in
  std::string custom_id;  // the record's custom_id when it could be read before the failure; else empty
  std::string id;         // the job id the record answers to (its results and dead letter are keyed by
                          // it): custom_id when it is a valid id, else the key, else topic-partition-offset
};

using DecodedJob = std::variant<Job, DecodeFailure>;
DecodedJob decode_job(std::string_view payload, const RecordRef& where);

// The job as a record, in job.encoding (what a retry writes, and what tests produce).
std::string encode_job(const Job& job);

// A job's outcome for the results topic.
struct JobOutcome {
  bool ok = false;
  int status_code = 200;       // of the response (ok)
  std::string request_id;      // the pipeline's id for the attempt ("chatcmpl-7")
  std::string body;            // the response body, serialized JSON (ok)
  JobError error;              // why it failed for good (not ok)
  std::uint32_t attempts = 0;  // attempts made, this one included
  // Per-stage timings of the attempt, a JSON object ({"stages":[...],"total_us":..}); empty: none.
  std::string timings_json;
  // Set when `body` and `timings_json` come from Sluice's own JSON writers (the Kafka source's
  // results): a JSON line then splices them as written once they are checked to be valid UTF-8
  // on one line (a model's text can end mid-character), without parsing them again, which cost
  // about 12 ns a byte (5.5 ms for 64 embeddings, bench_kafka_job_encode). Unset (any other caller's
  // bytes): each is checked as JSON within the depth bound, and written as a JSON string if it is
  // not.
  bool written_by_sluice = false;
};
std::string encode_result(const Job& job, const JobOutcome& outcome);

// A record given up on: `job` when it decoded (else null and `encoding` says how to write),
// the original bytes, where they came from, why, and every error of its attempts.
struct DeadLetterInput {
  const Job* job = nullptr;  // null for a record that is not a job: then `failure` says what was read
  const DecodeFailure* failure = nullptr;
  JobEncoding encoding = JobEncoding::kJson;
  std::string_view original;
  RecordRef source;
  JobError reason;
  std::uint32_t attempts = 0;
};
std::string encode_dead_letter(const DeadLetterInput& letter);

}  // namespace sluice::kafka
