// The state of a KafkaSource (kafka_source.h), shared by its two halves: the consumer side
// (kafka_source.cc: lifecycle, the consumer loop, rebalances, pausing, commits) and the
// outcome side (kafka_outcomes.cc: the job's sink, what each attempt's end writes, deliveries).
// Private to connectors/kafka.
#pragma once

#include <librdkafka/rdkafka.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <queue>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "connectors/http/request_intake.h"
#include "connectors/kafka/job_codec.h"
#include "connectors/kafka/kafka_source.h"
#include "connectors/kafka/offset_tracker.h"
#include "connectors/kafka/rdkafka_handles.h"
#include "connectors/kafka/retry_policy.h"
#include "graph/metrics.h"
#include "graph/mutex.h"
#include "graph/request.h"

namespace sluice::kafka {

// One record taken from Kafka, from the poll until what was written for it is acknowledged.
struct JobTask {
  // Where it came from.
  std::string topic;
  std::int32_t partition = 0;
  std::int64_t offset = 0;
  std::uint64_t epoch = 0;  // the partition's epoch when taken (OffsetTracker)
  std::string key;
  std::string original;     // the record's bytes, for a dead letter
  // W3C trace context: the record's "traceparent" header as it came, and what the records this
  // job writes carry in theirs (with tracing on, the job's request span; else the job's own).
  std::string header_traceparent;
  std::string traceparent_out;
  Nanos taken_at = 0;

  bool decoded = false;
  Job job;                  // when decoded
  DecodeFailure failure;    // when not

  // The attempt in progress.
  Nanos submitted_at = 0;
  // Set by the sink when the request completed inside Pipeline::submit (an intake refusal);
  // the consumer thread then acts on it after submit returns. Touched by that thread only.
  bool completed_in_submit = false;
  // The thread inside Pipeline::submit for this job, while it is there (a completion on that
  // thread is an intake refusal; one on any other is the pipeline's answer).
  std::atomic<std::thread::id> submitting_thread{};
  Status intake_status;

  // Records written for this step (a result; a retry; or a dead letter and an error result),
  // counted down by delivery reports; at zero the offset is acknowledged.
  std::atomic<int> deliveries_pending{0};
  enum class Written { kNone, kResult, kRetry, kDeadLetter } written = Written::kNone;
};
using JobTaskPtr = std::shared_ptr<JobTask>;

// How one attempt ended, as the sink saw it.
struct AttemptEnd {
  Status status;
  std::string request_id;
  std::string body;          // the answer body (ok)
  std::string timings_json;  // per-stage timings
};

// A production waiting to be attempted again (the local queue was full, or delivery failed).
struct PendingProduce {
  Nanos due = 0;
  std::string topic, key, payload;
  JobTaskPtr task;
};

struct KafkaSource::Impl {
  Impl(const KafkaSourceConfig& config, std::string name, http::RequestIntake& intake);

  // ---- consumer side (kafka_source.cc)
  void consume_loop();
  void handle_message(rd_kafka_message_t* message);
  void submit_job(const JobTaskPtr& task);
  void release_due_retries();
  void apply_pause(Nanos now);
  // Whether the loop is to wait for acknowledgements instead of polling (full, not paused yet).
  bool holding_for_acks() const { return full_in_flight && !paused_all.load(); }
  // Half of max_in_flight: where the loop, held (or paused) at max_in_flight, takes records again.
  std::size_t resume_in_flight() const { return config.max_in_flight() / 2; }
  void commit(bool sync, bool all);
  // Unsubscribes and serves the resulting revocation (on_rebalance) on the calling thread until
  // nothing is assigned, or `timeout` passes; records still fetched are dropped, uncommitted.
  // Called by stop() before rd_kafka_consumer_close, so that close runs no rebalance callback:
  // see stop() for why.
  void leave_group(Nanos timeout);
  void on_rebalance(rd_kafka_t* consumer, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* partitions);
  void forget(const std::vector<OffsetTracker::Partition>& revoked);
  void hand_back(const JobTaskPtr& task);

  // ---- outcome side (kafka_outcomes.cc)
  // The attempt of `task` ended; writes its result, retry or dead letter. Any thread.
  void attempt_ended(const JobTaskPtr& task, AttemptEnd end);
  // A record that cannot become a request (malformed, a refused body): dead letter and error result.
  void dead_letter(const JobTaskPtr& task, const JobError& reason);
  void produce(const std::string& topic, const std::string& key, std::string payload, const JobTaskPtr& task);
  void on_delivery(const rd_kafka_message_t* message);
  void produce_pending(Nanos now);
  void acknowledged(const JobTaskPtr& task);
  std::int64_t now_unix_ms() const;

  // ---- configuration
  KafkaSourceConfig config;
  std::string name;
  http::RequestIntake& intake;
  std::vector<std::string> models;
  bool answers_embeddings = false;  // the pipeline has an enabled embeddings node
  int default_class = 0;
  RetrySettings retry;
  Nanos commit_interval = 0;
  std::vector<Property> properties;  // the pipeline file's, after Sluice's defaults

  // ---- handles and threads
  KafkaHandle consumer, producer;
  // The consumer's queue, yielded to wake the loop's poll when acknowledgements bring the jobs
  // in flight down to the resume mark (a paused loop would otherwise sleep out its poll slice).
  QueueHandle consumer_queue;
  // The producer's handles of the three output topics, made at start so their metadata is
  // known before the first result: a first production to an unknown topic otherwise waits
  // for a metadata refresh (measured: 0.4-0.9 s on the first retry).
  std::vector<rd_kafka_topic_t*> output_topics;
  std::thread consumer_thread, producer_thread;
  std::atomic<bool> accepting{true};
  std::atomic<bool> stopping{false};
  std::atomic<bool> producer_stopping{false};
  bool stopped = false;  // stop() ran (lifecycle thread only)

  OffsetTracker offsets;

  // ---- consumer thread only
  JobTaskPtr blocked;        // refused at intake; offered again at blocked_retry_at
  Nanos blocked_retry_at = 0;
  struct DueLater {
    bool operator()(const std::pair<std::int64_t, JobTaskPtr>& a, const std::pair<std::int64_t, JobTaskPtr>& b) const {
      return a.first > b.first;
    }
  };
  std::priority_queue<std::pair<std::int64_t, JobTaskPtr>, std::vector<std::pair<std::int64_t, JobTaskPtr>>, DueLater>
      delayed;  // by not_before (unix ms)
  std::map<OffsetTracker::Partition, bool> paused_now;  // assigned partitions, and whether paused
  Nanos last_commit = 0;
  bool retry_full = false;  // the retry topic is paused: max_delayed records are held
  // max_in_flight jobs were in flight, and not yet resume_in_flight() or fewer (not the first
  // free slot). While full the loop does not poll, so the bound holds and librdkafka keeps its
  // prefetched records; only when full for longer than kFullPauseAfter (jobs stalled) are the
  // partitions paused, so that polling can go on serving rebalances. Pausing drops the
  // prefetched records, and each pause-resume cycle cost about 300 ms on the mock cluster
  // (800 jobs/s at the default bound against 7,800 without pausing: docs/benchmarks.md).
  bool full_in_flight = false;
  Nanos full_since = 0;  // when full_in_flight last became true

  // ---- any thread
  Mutex pending_mu;
  std::deque<PendingProduce> pending GUARDED_BY(pending_mu);
  Mutex random_mu;
  std::mt19937_64 random GUARDED_BY(random_mu);
  std::atomic<std::size_t> in_flight{0};
  std::atomic<std::size_t> in_flight_peak{0};
  std::atomic<std::size_t> delayed_count{0};
  std::atomic<bool> paused_all{false};
  std::atomic<bool> waiting_for_acks{false};  // full_in_flight: an ack at the mark wakes the loop
  std::atomic<int> assigned_partitions{0};  // of the jobs and retry topics; written by the rebalance callback

  // ---- metrics
  Counter* records_total = nullptr;
  Counter* completed_total = nullptr;
  Counter* retried_total = nullptr;
  Counter* dead_lettered_total = nullptr;
  Counter* handed_back_total = nullptr;
  Counter* intake_refusals_total = nullptr;
  Counter* delivery_errors_total = nullptr;
  Counter* commits_total = nullptr;
  Counter* rebalances_total = nullptr;
  Histogram* job_seconds = nullptr;  // from the record's take to its acknowledgement
};

}  // namespace sluice::kafka
