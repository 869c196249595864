// Decoding Kafka job records (connectors/kafka/job_codec.h): JSON lines per second on one
// thread, for a small chat body (the throughput bench's) and a large one (a chat with a long
// context, 16 KiB), and the protobuf encoding of the same jobs. What the consumer thread spends
// per record before the job enters the pipeline (docs/benchmarks.md, "Kafka").
// Usage: bench_kafka_job_decode [repeats=5] [seconds per measurement=0.5]
#include <cstdio>
#include <cstdlib>
#include <string>
#include <variant>
#include <vector>

#include "bench/kafka/calls_per_second.h"
#include "connectors/kafka/job_codec.h"

using namespace sluice::kafka;

namespace {

std::string chat_line(const std::string& content) {
  return R"({"custom_id": "job-17", "method": "POST", "url": "/v1/chat/completions", "body": {"model": "sluice", )"
         R"("messages": [{"role": "system", "content": "You answer briefly."}, {"role": "user", "content": ")" +
         content + R"("}], "max_tokens": 64, "temperature": 0}})";
}

}  // namespace

int main(int argc, char** argv) {
  const int repeats = argc > 1 ? std::atoi(argv[1]) : 5;
  const double seconds = argc > 2 ? std::atof(argv[2]) : 0.5;
  std::string long_context;
  while (long_context.size() < 16384) long_context += "The sea otter holds hands while it sleeps. ";
  const std::vector<std::pair<std::string, std::string>> bodies = {{"small body", chat_line("question 17")},
                                                                     {"16 KiB body", chat_line(long_context)}};
  std::vector<std::pair<std::string, std::string>> records;  // name, record
  for (const auto& [size, line] : bodies) {
    records.emplace_back("json, " + size, line);
    Job job = std::get<Job>(decode_job(line, RecordRef{"sluice.jobs", 0, 0, ""}));
    job.encoding = JobEncoding::kProto;
    records.emplace_back("protobuf, " + size, encode_job(job));
  }
  std::printf("%-22s %8s %14s %12s\n", "record", "bytes", "decodes/s", "us/decode");
  for (const auto& [name, record] : records) {
    const RecordRef where{"sluice.jobs", 3, 12345, ""};
    std::vector<double> rates;
    for (int r = 0; r < repeats; ++r) {
      rates.push_back(sluice::bench::calls_per_second(
          [&] { return std::holds_alternative<Job>(decode_job(record, where)); }, seconds, 256,
          "bench_kafka_job_decode: a record did not decode"));
    }
    const double median = sluice::bench::median_of(rates);
    std::printf("%-22s %8zu %14.0f %12.2f\n", name.c_str(), record.size(), median, 1e6 / median);
  }
}
