// KafkaJobQueue: the HTTP source's JobQueue on Kafka (docs/kafka.md, HTTP to Kafka;
// connectors/http/job_queue.h for the contract, async_jobs.h for the HTTP side).
//
//  - enqueue: the job line is produced to `topic`, keyed by the job id, by an idempotent
//    acks=all producer; `done` runs from its delivery report (ok: every in-sync replica has it),
//    or with kUnavailable when max_pending records await acknowledgement, the queue is stopping,
//    or the broker did not acknowledge within ack_timeout (message.timeout.ms). A job is in the
//    table as queued from enqueue on, and forgotten again if its production failed.
//  - lookup: the JobTable (job_table.h) that a consumer of `results_topic` feeds. The consumer
//    takes every partition by assignment (no group membership, no commits: each HTTP replica
//    reads all results), from the offsets of `results_lookback` ago, so a restart still knows
//    the last hour's results; partitions added later are taken from their beginning when the
//    topic's metadata next shows them (every 30 s). Results that are not JSON lines with a
//    string "id" are skipped (the HTTP side only writes JSON jobs).
//  - ready(): the results consumer has its partitions, so no result of a job queued from now
//    on can be missed. enqueue() before that still works (the record is safe in Kafka), but a
//    result written before the assignment may only be seen through results_lookback.
//
// Lifecycle: construct (validates; throws std::invalid_argument naming the field) -> start()
// (throws std::runtime_error when librdkafka refuses the settings) -> stop(): waits up to
// ack_timeout for records in flight, then fails the rest. Metrics: sluice_async_jobs_pending,
// sluice_async_jobs_tracked, sluice_async_jobs_tracked_bytes, sluice_async_job_results_total,
// sluice_async_jobs_forgotten_total, labelled by source.
//
// Thread-safety: enqueue and lookup from any thread; lifecycle calls from one.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "connectors/http/job_queue.h"
#include "connectors/kafka/job_table.h"
#include "connectors/kafka/rdkafka_handles.h"
#include "graph/clock.h"
#include "graph/metrics.h"
#include "graph/schema.h"

namespace sluice::kafka {

class KafkaJobQueue final : public http::JobQueue {
 public:
  KafkaJobQueue(const AsyncJobsConfig& config, std::string source_name, MetricsRegistry& metrics);
  ~KafkaJobQueue() override;

  void start();
  void stop();
  bool ready() const { return assigned_.load(std::memory_order_acquire); }

  void enqueue(http::JobRecord record, std::function<void(Status)> done) override;
  std::optional<http::JobLookup> lookup(const std::string& id) const override { return table_.lookup(id); }

  // The delivery report of one record (librdkafka's callback, on the producer's poll thread).
  void delivered(const rd_kafka_message_t& message);

 private:
  void consume_loop();
  void drain_producer(Nanos timeout);
  // Assigns the results topic's partitions not yet taken; true once it has some.
  bool assign_new_partitions(bool first);
  void take_result(const rd_kafka_message_t& message);

  AsyncJobsConfig config_;
  std::string name_;
  std::vector<Property> properties_;
  Nanos ack_timeout_;
  Nanos lookback_;
  JobTable table_;

  KafkaHandle producer_, consumer_;
  rd_kafka_topic_t* jobs_topic_ = nullptr;
  std::thread producer_thread_, consumer_thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> assigned_{false};
  std::atomic<std::int64_t> pending_{0};
  int partitions_taken_ = 0;  // consumer thread only
  bool started_ = false, stopped_ = false;

  Counter* results_total_;
  Counter* forgotten_total_;
};

}  // namespace sluice::kafka
