#include "connectors/kafka/job_codec.h"

#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "graph/base64.h"
#include "graph/document_id.h"
#include "graph/json_reading.h"
#include "graph/utf8.h"
#include "sluice/jobs.pb.h"

namespace sluice::kafka {
namespace {

using nlohmann::json;
// Outputs keep their fields in the documented order (custom_id, method, url, body, ...).
// Inputs are parsed into `json` (sorted std::map): ordered_json's linear key lookup would make
// parsing an object of n keys cost n^2, a lever for a hostile record.
using ordered = nlohmann::ordered_json;
namespace pb = sluice::jobs::v1;

// A body may nest as deep as the HTTP source allows one (64 levels, connectors/http/
// json_body.cc), plus the line around it. Bounded because dump() recurses.
constexpr int kMaxLineDepth = 65;
constexpr int kMaxBodyDepth = 64;
// Messages quote parser output, which may hold a long token; cut them here.
constexpr std::size_t kMaxMessageBytes = 600;

constexpr std::string_view kEndpointList = "/v1/chat/completions, /v1/completions, /v1/embeddings, /v1/retrieve";

// ---- UTF-8 ------------------------------------------------------------------------

// `s` (valid UTF-8) cut to at most kMaxMessageBytes on a character boundary.
std::string shorten(std::string s) {
  if (s.size() <= kMaxMessageBytes) return s;
  std::size_t cut = kMaxMessageBytes - 3;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  s.resize(cut);
  return s + "...";
}

// ---- reading JSON -------------------------------------------------------------------------

bool is_json_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Parses `text` into *out; on failure, why, as a sentence about `what` ("the record", "'body'")
// naming the field of an out-of-range number relative to `path` ("body"). Never throws: the
// common case parses without exceptions, a failure is parsed again to be explained (unless
// `explain` is false: then the reason is "").
std::optional<std::string> parse_json(std::string_view text, int max_depth, std::string_view what,
                                      std::string path, json* out, bool explain = true,
                                      const json::parser_callback_t& keep = nullptr) {
  if (auto at = json_too_deep(text, max_depth)) {
    return std::string(what) + " nests deeper than " + std::to_string(max_depth) + " levels (at byte " +
           std::to_string(*at) + ")";
  }
  if (auto at = json_nul_byte(text)) {
    return explain ? std::string(what) + " is not valid JSON: a NUL byte at byte " + std::to_string(*at) : std::string();
  }
  *out = json::parse(text.begin(), text.end(), keep, /*allow_exceptions=*/false);
  if (!out->is_discarded()) return std::nullopt;
  if (!explain) return std::string();
  JsonPath tracker(std::move(path));
  try {
    const json ignored = json::parse(text.begin(), text.end(), [&tracker](int, json::parse_event_t event, json& parsed) {
      tracker.on_event(event, parsed);
      return true;
    });
  } catch (const json::out_of_range& e) {
    // nlohmann's only out_of_range while parsing: "number overflow parsing '1e400'" (406).
    const std::string field = tracker.current();
    return (field.empty() ? std::string(what) + " holds a number out of range"
                          : "'" + field + "' is out of range") + ": " + strip_json_exception_id(e.what());
  } catch (const json::exception& e) {
    return std::string(what) + " is not valid JSON: " + strip_json_exception_id(e.what());
  }
  return std::string(what) + " is not valid JSON";
}

// The member `key` of `object`; nullptr when absent or null (null means "not given", as in
// the OpenAI output lines' "custom_id": null).
const json* member(const json& object, const char* key) {
  auto it = object.find(key);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

std::string wrong_type(const std::string& field, std::string_view expected, const json& got) {
  return "'" + field + "' must be " + std::string(expected) + ", got " + std::string(json_type_name(got));
}

std::optional<std::string> read_string(const json& object, const char* key, const std::string& path,
                                       std::string* out) {
  const json* v = member(object, key);
  if (!v) return std::nullopt;
  if (!v->is_string()) return wrong_type(path + key, "a string", *v);
  *out = v->get<std::string>();
  return std::nullopt;
}

// An integer in [min, max]; absent leaves *out alone.
template <class Int>
std::optional<std::string> read_integer(const json& object, const char* key, const std::string& path, Int* out) {
  const json* v = member(object, key);
  if (!v) return std::nullopt;
  const std::string field = path + key;
  if (!v->is_number_integer()) return wrong_type(field, "an integer", *v);
  constexpr auto lo = std::numeric_limits<Int>::min();
  constexpr auto hi = std::numeric_limits<Int>::max();
  if (v->is_number_unsigned()) {
    const auto u = v->get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(hi)) return "'" + field + "' " + std::to_string(u) + " is over the maximum of " + std::to_string(hi);
    *out = static_cast<Int>(u);
  } else {
    const auto s = v->get<std::int64_t>();
    if (s < static_cast<std::int64_t>(lo)) {
      return lo == 0 ? "'" + field + "' must not be negative, got " + std::to_string(s)
                     : "'" + field + "' " + std::to_string(s) + " is under the minimum of " + std::to_string(lo);
    }
    if (s > 0 && static_cast<std::uint64_t>(s) > static_cast<std::uint64_t>(hi)) {
      return "'" + field + "' " + std::to_string(s) + " is over the maximum of " + std::to_string(hi);
    }
    *out = static_cast<Int>(s);
  }
  return std::nullopt;
}

std::optional<std::string> read_error(const json& v, const std::string& path, JobError* out) {
  if (!v.is_object()) return wrong_type(path, "an object", v);
  const std::string p = path + ".";
  if (auto e = read_string(v, "code", p, &out->code)) return e;
  if (auto e = read_string(v, "message", p, &out->message)) return e;
  if (auto e = read_integer(v, "status", p, &out->status)) return e;
  if (auto e = read_integer(v, "attempt", p, &out->attempt)) return e;
  if (auto e = read_integer(v, "at", p, &out->at_unix_ms)) return e;
  return std::nullopt;
}

// "x_sluice": Sluice's fields of a retry record; unknown members are ignored (newer writers).
std::optional<std::string> read_x_sluice(const json& x, Job* job, std::optional<std::string>* id) {
  if (!x.is_object()) return wrong_type("x_sluice", "an object", x);
  const std::string p = "x_sluice.";
  if (const json* v = member(x, "id")) {
    if (!v->is_string()) return wrong_type("x_sluice.id", "a string", *v);
    *id = v->get<std::string>();
  }
  if (auto e = read_string(x, "priority", p, &job->priority)) return e;
  if (auto e = read_integer(x, "attempt", p, &job->attempt)) return e;
  if (auto e = read_integer(x, "not_before", p, &job->not_before_unix_ms)) return e;
  if (auto e = read_integer(x, "deadline", p, &job->deadline_unix_ms)) return e;
  if (auto e = read_string(x, "traceparent", p, &job->traceparent)) return e;
  if (auto e = read_string(x, "tenant", p, &job->tenant)) return e;
  if (const json* errors = member(x, "errors")) {
    if (!errors->is_array()) return wrong_type("x_sluice.errors", "an array", *errors);
    for (std::size_t i = 0; i < errors->size(); ++i) {
      JobError err;
      if (auto e = read_error((*errors)[i], "x_sluice.errors[" + std::to_string(i) + "]", &err)) return e;
      job->errors.push_back(std::move(err));
    }
  }
  return std::nullopt;
}

// ---- writing JSON -------------------------------------------------------------------------

// A JSON string of `s`, invalid UTF-8 replaced.
ordered text(std::string_view s) { return ordered(valid_utf8(s)); }

// Compact, and never throwing: strings were made valid UTF-8, and `replace` guards the rest.
std::string dump(const ordered& j) { return j.dump(-1, ' ', false, ordered::error_handler_t::replace); }

// `serialized` appended to a line being written as JSON text: as JSON when it is JSON within
// the depth bound, checked without building a tree and written as it is less the whitespace
// between tokens (its members in their order, and a record stays one line); otherwise as a JSON
// string, so the output is valid JSON whatever the bytes.
void append_embedded(std::string& out, std::string_view serialized) {
  if (!json_nul_byte(serialized) && !json_too_deep(serialized, kMaxBodyDepth) &&
      json::accept(serialized.begin(), serialized.end())) {
    out += json_minified(serialized);
  } else {
    out += dump(text(serialized));
  }
}

// Whether `s` is well-formed UTF-8 with no line break: what a line needs of a JSON text that
// Sluice wrote (JobOutcome::written_by_sluice). ASCII is checked eight bytes at a time.
bool one_line_of_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    if (i + 8 <= s.size()) {
      std::uint64_t w;
      std::memcpy(&w, s.data() + i, 8);
      // No byte with its high bit set, and none equal to '\n' (0x0A) or '\r' (0x0D).
      const auto has = [w](std::uint64_t byte) {
        const std::uint64_t x = w ^ (byte * 0x0101010101010101ull);
        return ((x - 0x0101010101010101ull) & ~x & 0x8080808080808080ull) != 0;
      };
      if ((w & 0x8080808080808080ull) == 0 && !has(0x0A) && !has(0x0D)) {
        i += 8;
        continue;
      }
    }
    const auto b = static_cast<unsigned char>(s[i]);
    if (b == '\n' || b == '\r') return false;
    if (b < 0x80) {
      ++i;
      continue;
    }
    const std::size_t n = utf8_sequence(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

// `serialized` appended as written when Sluice wrote it and it is one line of UTF-8 (and not
// empty, which is no JSON); otherwise as append_embedded decides.
void append_written(std::string& out, std::string_view serialized, bool written_by_sluice) {
  if (written_by_sluice && !serialized.empty() && one_line_of_utf8(serialized)) {
    out += serialized;
  } else {
    append_embedded(out, serialized);
  }
}

ordered error_json(const JobError& e) {
  return ordered{{"code", text(e.code)}, {"message", text(e.message)}, {"status", e.status},
                 {"attempt", e.attempt}, {"at", e.at_unix_ms}};
}

ordered errors_json(const std::vector<JobError>& errors) {
  ordered out = ordered::array();
  for (const JobError& e : errors) out.push_back(error_json(e));
  return out;
}

// ---- protobuf -----------------------------------------------------------------------------

pb::Endpoint to_proto(JobEndpoint e) {
  switch (e) {
    case JobEndpoint::kChatCompletions: return pb::CHAT_COMPLETIONS;
    case JobEndpoint::kCompletions: return pb::COMPLETIONS;
    case JobEndpoint::kEmbeddings: return pb::EMBEDDINGS;
    case JobEndpoint::kRetrieve: return pb::RETRIEVE;
  }
  return pb::ENDPOINT_UNSPECIFIED;
}

void to_proto(const JobError& e, pb::JobError* out) {
  out->set_code(valid_utf8(e.code));
  out->set_message(valid_utf8(e.message));
  out->set_status(e.status);
  out->set_attempt(e.attempt);
  out->set_at_unix_ms(e.at_unix_ms);
}

void to_proto(const Job& job, pb::Job* out) {
  out->set_endpoint(to_proto(job.endpoint));
  out->set_id(valid_utf8(job.id));
  out->set_custom_id(valid_utf8(job.custom_id));
  out->set_body(valid_utf8(job.body));
  out->set_priority(valid_utf8(job.priority));
  out->set_attempt(job.attempt);
  out->set_not_before_unix_ms(job.not_before_unix_ms);
  out->set_deadline_unix_ms(job.deadline_unix_ms);
  out->set_traceparent(valid_utf8(job.traceparent));
  out->set_tenant(valid_utf8(job.tenant));
  for (const JobError& e : job.errors) to_proto(e, out->add_errors());
}

// ---- decoding -----------------------------------------------------------------------------

DecodeFailure failure(std::string code, std::string message, JobEncoding encoding) {
  DecodeFailure f;
  f.code = std::move(code);
  f.message = shorten(valid_utf8(message));
  f.encoding = encoding;
  return f;
}

// A failure of a record whose custom_id was read (it is answered under that id).
DecodeFailure failure(const Job& read_so_far, std::string code, std::string message) {
  DecodeFailure f = failure(std::move(code), std::move(message), read_so_far.encoding);
  f.custom_id = read_so_far.custom_id;
  return f;
}

// The id of a record that names none itself: its key, else topic-partition-offset.
std::string record_id(const RecordRef& where) {
  if (!where.key.empty()) return std::string(where.key);
  return std::string(where.topic) + "-" + std::to_string(where.partition) + "-" + std::to_string(where.offset);
}

// Sets job->id: custom_id, else `carried` (x_sluice.id or Job.id: the id a retry record keeps
// from the record it retries), else the key, else topic-partition-offset. Checked by the
// document id rule (graph/document_id.h): at most 512 bytes of UTF-8 without control
// characters, as it is echoed in results and logs.
std::optional<DecodeFailure> assign_id(Job* job, const std::optional<std::string>& carried, std::string_view carried_name,
                                       const RecordRef& where) {
  std::string from;
  if (!job->custom_id.empty()) {
    job->id = job->custom_id;
    from = "'custom_id'";
  } else if (carried) {
    job->id = *carried;
    from = "'" + std::string(carried_name) + "'";
  } else {
    job->id = record_id(where);
    from = where.key.empty() ? "the id made of the record's topic, partition and offset" : "the record key";
  }
  if (auto why = document_id_problem(job->id)) {
    return failure("invalid_id", from + " " + quote_document_id(job->id) + " is not a valid job id: " + *why, job->encoding);
  }
  return std::nullopt;
}

DecodedJob decode_json_line(std::string_view payload, const RecordRef& where) {
  constexpr JobEncoding kJson = JobEncoding::kJson;
  // The line's tree is built without the body when the body is an object: the job carries the
  // body as written (json_member_text below) and its endpoint parses that, so a tree of it here
  // would parse it twice (nlohmann's parser was a quarter of the consumer thread's time). Any
  // other body is kept, to be refused by its type.
  bool after_body_key = false, body_is_object = false;
  const json::parser_callback_t keep = [&](int depth, json::parse_event_t event, json& parsed) {
    if (depth != 1) return true;
    if (event == json::parse_event_t::key) {
      after_body_key = parsed == "body";
      return true;
    }
    const bool skip = after_body_key && event == json::parse_event_t::object_start;
    if (after_body_key) body_is_object = skip;  // a repeated "body" key: the last one counts, as nlohmann's
    after_body_key = false;
    return !skip;
  };
  json line;
  if (auto problem = parse_json(payload, kMaxLineDepth, "the record", "", &line, /*explain=*/true, keep)) {
    return failure("invalid_json", *problem, kJson);
  }
  if (!line.is_object()) {
    return failure("invalid_job", "a JSON job record must be one object (an OpenAI Batch input line), got " +
                                      std::string(json_type_name(line)), kJson);
  }
  Job job;
  job.encoding = kJson;
  bool has_custom_id = false;
  if (const json* v = member(line, "custom_id")) {
    if (!v->is_string()) return failure("invalid_job", wrong_type("custom_id", "a string", *v), kJson);
    job.custom_id = v->get<std::string>();
    has_custom_id = true;
  }
  // What fails from here on is answered under the custom_id read above.
  auto fail = [&job](std::string code, std::string message) { return failure(job, std::move(code), std::move(message)); };
  if (const json* v = member(line, "method")) {
    if (!v->is_string()) return fail("invalid_job", wrong_type("method", "a string", *v));
    if (v->get_ref<const std::string&>() != "POST") {
      return fail("invalid_method", "'method' " + quote_document_id(v->get_ref<const std::string&>()) +
                                           " is not POST, the only method of a batch line");
    }
  }
  const json* url = member(line, "url");
  if (!url) return fail("invalid_job", "'url' is missing: a job line is an OpenAI Batch input line {custom_id, method, url, body}");
  if (!url->is_string()) return fail("invalid_job", wrong_type("url", "a string", *url));
  const std::string& u = url->get_ref<const std::string&>();
  if (u == endpoint_url(JobEndpoint::kChatCompletions)) job.endpoint = JobEndpoint::kChatCompletions;
  else if (u == endpoint_url(JobEndpoint::kCompletions)) job.endpoint = JobEndpoint::kCompletions;
  else if (u == endpoint_url(JobEndpoint::kEmbeddings)) job.endpoint = JobEndpoint::kEmbeddings;
  else if (u == endpoint_url(JobEndpoint::kRetrieve)) job.endpoint = JobEndpoint::kRetrieve;
  else return fail("unknown_endpoint", "'url' " + quote_document_id(u) + " is not one of " + std::string(kEndpointList));
  if (!body_is_object) {
    const json* body = member(line, "body");
    if (!body) return fail("invalid_job", "'body' is missing: the endpoint's request body, a JSON object");
    return fail("invalid_job", wrong_type("body", "a JSON object", *body));
  }
  // As written, less whitespace: a tree (sorted keys) written out again would reorder a JSON
  // schema's properties, which structured output generates in their order.
  const auto body_text = json_member_text(payload, "body");
  // The scan finds what the parser found (the fuzzer checks it); a disagreement is a bug, and
  // refusing the record says so where a fallback would quietly reorder the body.
  if (!body_text) return fail("internal", "the body the parser read was not found in the record's text");
  job.body = json_minified(*body_text);
  std::optional<std::string> carried_id;
  if (const json* x = member(line, "x_sluice")) {
    if (auto problem = read_x_sluice(*x, &job, &carried_id)) return fail("invalid_job", *problem);
  }
  // An explicit custom_id is checked even when empty ("it is empty").
  if (has_custom_id && job.custom_id.empty()) {
    return fail("invalid_id", "'custom_id' \"\" is not a valid job id: it is empty");
  }
  if (auto bad = assign_id(&job, carried_id, "x_sluice.id", where)) return fail(bad->code, bad->message);
  return job;
}

DecodedJob decode_proto_job(std::string_view payload, const RecordRef& where) {
  constexpr JobEncoding kProto = JobEncoding::kProto;
  pb::Job m;
  if (payload.size() > static_cast<std::size_t>(INT_MAX) || !m.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
    return failure("invalid_job", "the record is neither a JSON object (its first byte other than whitespace is not '{') "
                                  "nor a serialized sluice.jobs.v1.Job (the protobuf does not parse)", kProto);
  }
  // Stray bytes can parse as a message of unknown fields only.
  if (m.endpoint() == pb::ENDPOINT_UNSPECIFIED && m.body().empty()) {
    return failure("invalid_job", "the record is not a JSON object, and read as a sluice.jobs.v1.Job it has neither "
                                  "'endpoint' nor 'body'", kProto);
  }
  Job job;
  job.encoding = kProto;
  job.custom_id = m.custom_id();
  // What fails from here on is answered under the custom_id just read.
  auto fail = [&job](std::string code, std::string message) { return failure(job, std::move(code), std::move(message)); };
  switch (m.endpoint()) {
    case pb::CHAT_COMPLETIONS: job.endpoint = JobEndpoint::kChatCompletions; break;
    case pb::COMPLETIONS: job.endpoint = JobEndpoint::kCompletions; break;
    case pb::EMBEDDINGS: job.endpoint = JobEndpoint::kEmbeddings; break;
    case pb::RETRIEVE: job.endpoint = JobEndpoint::kRetrieve; break;
    default: {
      const std::string which = m.endpoint() == pb::ENDPOINT_UNSPECIFIED ? "is ENDPOINT_UNSPECIFIED"
                                                                          : std::to_string(m.endpoint()) + " is unknown";
      return fail("unknown_endpoint", "'endpoint' " + which + ": one of CHAT_COMPLETIONS, COMPLETIONS, EMBEDDINGS, RETRIEVE (" +
                                             std::string(kEndpointList) + ")");
    }
  }
  if (m.body().empty()) return fail("invalid_job", "'body' is missing: the endpoint's request body, a JSON object");
  json body;
  if (auto problem = parse_json(m.body(), kMaxBodyDepth, "'body'", "body", &body)) return fail("invalid_job", *problem);
  if (!body.is_object()) return fail("invalid_job", wrong_type("body", "a JSON object", body));
  job.body = json_minified(m.body());  // as written (see decode_json_line)
  job.priority = m.priority();
  job.attempt = m.attempt();
  job.not_before_unix_ms = m.not_before_unix_ms();
  job.deadline_unix_ms = m.deadline_unix_ms();
  job.traceparent = m.traceparent();
  job.tenant = m.tenant();
  for (const pb::JobError& e : m.errors()) {
    job.errors.push_back(JobError{e.code(), e.message(), e.status(), e.attempt(), e.at_unix_ms()});
  }
  // proto3 cannot tell an empty id from none: empty is none.
  const std::optional<std::string> carried = m.id().empty() ? std::nullopt : std::optional<std::string>(m.id());
  if (auto bad = assign_id(&job, carried, "id", where)) return fail(bad->code, bad->message);
  return job;
}

// A payload that is JSON, but not an object, is reported as JSON: a serialized Job never is
// (a valid one starts with the endpoint's tag, 0x08).
bool is_json_value(std::string_view payload, std::size_t first) {
  if (std::string_view("[\"-0123456789tfn").find(payload[first]) == std::string_view::npos) return false;
  json ignored;
  return !parse_json(payload, kMaxLineDepth, "", "", &ignored, /*explain=*/false);
}

}  // namespace

std::string_view endpoint_url(JobEndpoint endpoint) {
  switch (endpoint) {
    case JobEndpoint::kChatCompletions: return "/v1/chat/completions";
    case JobEndpoint::kCompletions: return "/v1/completions";
    case JobEndpoint::kEmbeddings: return "/v1/embeddings";
    case JobEndpoint::kRetrieve: return "/v1/retrieve";
  }
  return "";
}

DecodedJob decode_job(std::string_view payload, const RecordRef& where) {
  std::size_t first = 0;
  while (first < payload.size() && is_json_space(payload[first])) ++first;
  if (first == payload.size()) {
    return failure("invalid_job", payload.empty() ? "the record is empty" : "the record holds only whitespace",
                   JobEncoding::kProto);
  }
  DecodedJob decoded = payload[first] == '{' || is_json_value(payload, first) ? decode_json_line(payload, where)
                                                                             : decode_proto_job(payload, where);
  if (auto* f = std::get_if<DecodeFailure>(&decoded)) {
    f->id = !f->custom_id.empty() && !document_id_problem(f->custom_id) ? f->custom_id : record_id(where);
  }
  return decoded;
}

std::string encode_job(const Job& job) {
  if (job.encoding == JobEncoding::kProto) {
    pb::Job m;
    to_proto(job, &m);
    return m.SerializeAsString();
  }
  // The batch line as the user wrote it, plus x_sluice with whatever is not a default.
  ordered line = ordered::object();
  if (!job.custom_id.empty()) line["custom_id"] = text(job.custom_id);
  line["method"] = "POST";
  line["url"] = endpoint_url(job.endpoint);
  ordered x = ordered::object();
  // An id from the key or the offset: a retry record lives at another offset, maybe under
  // another key, and must keep the id.
  if (job.custom_id.empty() && !job.id.empty()) x["id"] = text(job.id);
  if (!job.priority.empty()) x["priority"] = text(job.priority);
  if (job.attempt != 0) x["attempt"] = job.attempt;
  if (job.not_before_unix_ms != 0) x["not_before"] = job.not_before_unix_ms;
  if (job.deadline_unix_ms != 0) x["deadline"] = job.deadline_unix_ms;
  if (!job.traceparent.empty()) x["traceparent"] = text(job.traceparent);
  if (!job.tenant.empty()) x["tenant"] = text(job.tenant);
  if (!job.errors.empty()) x["errors"] = errors_json(job.errors);
  // The body is spliced in (append_embedded), so the retry record keeps its members' order.
  std::string out = dump(line);  // never "{}": method and url are always there
  out.pop_back();                 // the closing brace
  out += ",\"body\":";
  append_embedded(out, job.body);
  if (!x.empty()) {
    out += ",\"x_sluice\":";
    out += dump(x);
  }
  out += '}';
  return out;
}

std::string encode_result(const Job& job, const JobOutcome& outcome) {
  if (job.encoding == JobEncoding::kProto) {
    pb::JobResult m;
    m.set_job_id(valid_utf8(job.id));
    m.set_custom_id(valid_utf8(job.custom_id));
    m.set_ok(outcome.ok);
    if (outcome.ok) {
      m.set_status_code(outcome.status_code);
      m.set_body(valid_utf8(outcome.body));
    } else {
      to_proto(outcome.error, m.mutable_error());
    }
    m.set_request_id(valid_utf8(outcome.request_id));
    m.set_attempts(outcome.attempts);
    m.set_timings_json(valid_utf8(outcome.timings_json));
    m.set_tenant(valid_utf8(job.tenant));
    return m.SerializeAsString();
  }
  // Written as text around the spliced body and timings (append_written): one result per job,
  // and parsing the answer into a tree to write it out again was most of encoding's cost.
  std::string line;
  line.reserve(outcome.body.size() + outcome.timings_json.size() + job.id.size() + job.custom_id.size() + 160);
  line += "{\"id\":";
  line += dump(text(job.id));
  line += ",\"custom_id\":";
  line += job.custom_id.empty() ? std::string("null") : dump(text(job.custom_id));
  if (outcome.ok) {
    line += ",\"response\":{\"status_code\":" + std::to_string(outcome.status_code) + ",\"request_id\":";
    line += dump(text(outcome.request_id));
    line += ",\"body\":";
    append_written(line, outcome.body, outcome.written_by_sluice);
    line += "},\"error\":null";
  } else {
    line += ",\"response\":null,\"error\":";
    line += dump(ordered{{"code", text(outcome.error.code)}, {"message", text(outcome.error.message)}});
  }
  line += ",\"x_sluice\":{\"attempts\":" + std::to_string(outcome.attempts);
  if (!outcome.timings_json.empty()) {
    line += ",\"timings\":";
    append_written(line, outcome.timings_json, outcome.written_by_sluice);
  }
  if (!job.tenant.empty()) {
    line += ",\"tenant\":";
    line += dump(text(job.tenant));
  }
  line += "}}";
  return line;
}

std::string encode_dead_letter(const DeadLetterInput& letter) {
  const Job* job = letter.job;
  const JobEncoding encoding = job ? job->encoding : letter.encoding;
  const DecodeFailure* f = job ? nullptr : letter.failure;
  const std::string_view id = job ? job->id : f ? f->id : std::string_view();
  const std::string_view custom_id = job ? job->custom_id : f ? f->custom_id : std::string_view();
  if (encoding == JobEncoding::kProto) {
    pb::DeadLetter m;
    if (job) {
      to_proto(*job, m.mutable_job());
      for (const JobError& e : job->errors) to_proto(e, m.add_errors());
    }
    m.set_original(std::string(letter.original));
    m.set_source_topic(valid_utf8(letter.source.topic));
    m.set_source_partition(letter.source.partition);
    m.set_source_offset(letter.source.offset);
    to_proto(letter.reason, m.mutable_reason());
    m.set_attempts(letter.attempts);
    m.set_id(valid_utf8(id));
    m.set_custom_id(valid_utf8(custom_id));
    return m.SerializeAsString();
  }
  ordered d = ordered::object();
  d["id"] = id.empty() ? ordered(nullptr) : text(id);
  d["custom_id"] = custom_id.empty() ? ordered(nullptr) : text(custom_id);
  d["reason"] = ordered{{"code", text(letter.reason.code)}, {"message", text(letter.reason.message)}};
  d["attempts"] = letter.attempts;
  d["errors"] = job ? errors_json(job->errors) : ordered::array();
  d["source"] = ordered{{"topic", text(letter.source.topic)}, {"partition", letter.source.partition},
                        {"offset", letter.source.offset}};
  d["original"] = text(letter.original);
  d["original_base64"] = base64(letter.original);
  return dump(d);
}

}  // namespace sluice::kafka
