// KafkaSource: a pipeline's Kafka job source (`kind: kafka`, proto/sluice/kafka.proto): a
// member of a consumer group that takes jobs from `topic` (and its own retries from
// `retry_topic`), runs each through the pipeline at its priority class, and writes what became
// of it: the result to `results_topic`, a later attempt to `retry_topic`, or the job with every
// error to `dead_letter_topic` (formats: job_codec.h; docs/kafka.md).
//
// Guarantees (docs/kafka.md, "Guarantees"):
//  - At-least-once end to end. Offsets are committed manually, every commit_interval and on
//    rebalance and stop, and only up to the lowest offset whose result, retry or dead letter
//    the broker has not acknowledged (offset_tracker.h). The producer is idempotent (acks=all);
//    a record whose delivery fails for good is produced again after a pause, never dropped.
//  - A malformed record is dead-lettered alone, with its original bytes and the reason; it
//    never stops the partition or fails other jobs.
//  - Bounded: at most max_in_flight jobs taken and not acknowledged; max_delayed retry records
//    held until due. At max_in_flight the loop stops polling (librdkafka's bounded prefetch
//    keeps the next records) and pauses every partition only if that lasts over 100 ms; at
//    max_delayed the retry topic is paused (the records stay in Kafka); nothing is buffered
//    beyond the bounds. A job the pipeline refuses at intake (its class's queue full, the
//    shedding ladder at its class) is held, every partition paused, and offered again after the
//    Retry-After (at most 1 s): backpressure, not a retry. A job shed after it was admitted,
//    timed out or failed is retried through `retry_topic` (retry_policy.h).
//  - Retries: one topic. Its records carry their due time; the source holds each in memory
//    until then (pausing the topic when max_delayed are held) and submits it within the
//    consumer loop's next pass (at most 100 ms late), so it never spins on a record not due.
//  - Rebalances: before a partition is revoked its acknowledged prefix is committed; its jobs
//    still in flight finish, but what they write is not acknowledged for this worker, so the
//    new owner redoes them: duplicates the job id identifies.
//  - Stop: stop_accepting() takes no more records (held and delayed jobs are handed back:
//    left uncommitted for the next owner); after the pipeline drained, stop() waits for the
//    producer's deliveries, commits, and leaves the group.
//
// Threads: a consumer thread (poll, rebalances, decode, submit, pause/resume, commits) and a
// producer thread (delivery reports). Completions arrive on the pipeline's threads and produce
// from there. Lifecycle: construct (validates; throws std::invalid_argument naming the source
// and field) -> start() (connects; throws std::runtime_error) -> stop_accepting() -> (the
// pipeline drains) -> stop(). The intake must outlive the source.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "connectors/http/request_intake.h"
#include "graph/schema.h"

namespace sluice {
class Pipeline;
}

namespace sluice::kafka {

// What the source has done so far; the same figures are exported as metrics.
struct KafkaSourceCounts {
  std::uint64_t records = 0;        // records taken from Kafka (jobs and retries)
  std::uint64_t completed = 0;      // results acknowledged
  std::uint64_t retried = 0;        // retry records acknowledged
  std::uint64_t dead_lettered = 0;  // dead letters acknowledged (malformed or out of attempts)
  std::uint64_t handed_back = 0;    // left uncommitted at stop or revoke
  std::uint64_t intake_refusals = 0;  // times the pipeline refused a job at intake (backpressure)
  std::uint64_t delivery_errors = 0;  // productions that failed and were produced again
  std::uint64_t commits = 0;
  std::uint64_t rebalances = 0;
  std::size_t in_flight = 0;      // taken, not yet acknowledged (held and delayed excluded)
  std::size_t in_flight_peak = 0;
  std::size_t delayed = 0;        // retry records held until due
  bool paused = false;            // every partition paused (backpressure or stopping)
  int assigned_partitions = 0;    // of the jobs and retry topics, owned now
};

class KafkaSource {
 public:
  KafkaSource(const KafkaSourceConfig& config, std::string source_name, http::RequestIntake& intake);
  // Convenience for the app: adapts (and keeps) the pipeline's intake.
  KafkaSource(const KafkaSourceConfig& config, std::string source_name, Pipeline& pipeline);
  ~KafkaSource();
  KafkaSource(const KafkaSource&) = delete;
  KafkaSource& operator=(const KafkaSource&) = delete;

  void start();
  void stop_accepting();
  // Waits up to `flush_timeout` for deliveries, commits, leaves the group. Idempotent.
  void stop(Nanos flush_timeout = 10 * kNanosPerSecond);

  const std::string& name() const;
  KafkaSourceCounts counts() const;

  struct Impl;

 private:
  std::unique_ptr<http::RequestIntake> owned_intake_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sluice::kafka
