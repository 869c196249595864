// Writing Kafka job results (connectors/kafka/job_codec.h, encode_result): JSON result lines per
// second on one thread, for a chat answer and for embeddings jobs' bodies (16 and 64 vectors of
// 512 floats, as /v1/embeddings writes them), each encoded twice in the same run: as the Kafka
// source's own results (written_by_sluice: spliced after a UTF-8 check) and as any caller's bytes
// (checked as JSON, then spliced). What a worker spends per result after the pipeline answered
// (docs/benchmarks.md, "Kafka").
// Usage: bench_kafka_job_encode [repeats=5] [seconds per measurement=0.5]
#include <cstdio>
#include <cstdlib>
#include <string>
#include <variant>
#include <vector>

#include "bench/kafka/calls_per_second.h"
#include "connectors/kafka/job_codec.h"

using namespace sluice::kafka;

namespace {

// An embeddings response body of `n` vectors of `dims` floats, written as %.9g like the HTTP
// source's writer, with values spread as a unit vector's are.
std::string embeddings_body(int n, int dims) {
  std::string out = R"({"object":"list","model":"use-lite","data":[)";
  unsigned state = 12345;
  char number[32];
  for (int i = 0; i < n; ++i) {
    if (i) out += ',';
    out += R"({"object":"embedding","index":)" + std::to_string(i) + R"(,"embedding":[)";
    for (int d = 0; d < dims; ++d) {
      state = state * 1664525u + 1013904223u;
      const double v = (static_cast<double>(state >> 8) / (1u << 24) - 0.5) * 0.09;
      std::snprintf(number, sizeof number, "%s%.9g", d ? "," : "", v);
      out += number;
    }
    out += "]}";
  }
  out += R"(],"usage":{"prompt_tokens":)" + std::to_string(n * 22) + R"(,"total_tokens":)" + std::to_string(n * 22) + "}}";
  return out;
}

const char* kChatBody =
    R"({"id":"chatcmpl-17","object":"chat.completion","created":1796666330,"model":"sluice","system_fingerprint":"fp_85d801b64f9ec7cf",)"
    R"("choices":[{"index":0,"message":{"role":"assistant","content":"Once upon a time, there was a little girl named Lily. She )"
    R"(loved to play outside in the sunshine."},"logprobs":null,"finish_reason":"length"}],)"
    R"("usage":{"prompt_tokens":12,"completion_tokens":24,"total_tokens":36}})";

const char* kTimings =
    R"({"stages":[{"name":"admit","queue_us":3,"service_us":1},{"name":"embed","queue_us":40,"service_us":41800}],"total_us":41900})";

// Result lines written per second over `seconds`; a line must carry the body.
double encodes_per_second(const Job& job, const JobOutcome& outcome, double seconds) {
  return sluice::bench::calls_per_second([&] { return encode_result(job, outcome).size() >= outcome.body.size(); },
                                         seconds, 16, "bench_kafka_job_encode: a result lost its body");
}

}  // namespace

int main(int argc, char** argv) {
  const int repeats = argc > 1 ? std::atoi(argv[1]) : 5;
  const double seconds = argc > 2 ? std::atof(argv[2]) : 0.5;
  const Job job = std::get<Job>(decode_job(R"({"custom_id":"job-17","url":"/v1/embeddings","body":{"input":"x"}})",
                                           RecordRef{"sluice.jobs", 0, 0, ""}));
  const std::vector<std::pair<std::string, std::string>> bodies = {
      {"chat answer", kChatBody}, {"16 x 512 floats", embeddings_body(16, 512)}, {"64 x 512 floats", embeddings_body(64, 512)}};
  std::printf("%-16s %9s %16s %16s %10s\n", "body", "bytes", "us, as written", "us, checked", "checked/");
  for (const auto& [name, body] : bodies) {
    JobOutcome outcome;
    outcome.ok = true;
    outcome.request_id = "embd-17";
    outcome.body = body;
    outcome.timings_json = kTimings;
    outcome.attempts = 1;
    std::vector<double> written, checked;  // alternating, so both see the same machine
    for (int r = 0; r < repeats; ++r) {
      outcome.written_by_sluice = true;
      written.push_back(encodes_per_second(job, outcome, seconds));
      outcome.written_by_sluice = false;
      checked.push_back(encodes_per_second(job, outcome, seconds));
    }
    const double w = 1e6 / sluice::bench::median_of(written), c = 1e6 / sluice::bench::median_of(checked);
    std::printf("%-16s %9zu %16.2f %16.2f %9.1fx\n", name.c_str(), body.size(), w, c, c / w);
  }
}
