#include "connectors/kafka/kafka_job_queue.h"

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "graph/proto_duration.h"
#include "graph/thread_names.h"

namespace sluice::kafka {
namespace {

constexpr Nanos kDefaultAckTimeout = 10 * kNanosPerSecond;
constexpr Nanos kDefaultLookback = 3600 * kNanosPerSecond;
constexpr Nanos kMetadataEvery = 30 * kNanosPerSecond;
constexpr int kMetadataTimeoutMs = 5000;

std::int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// What a delivery report needs: the caller's callback and the id to forget on failure.
struct Pending {
  std::string id;
  std::function<void(Status)> done;
};

void queue_delivery_trampoline(rd_kafka_t*, const rd_kafka_message_t* message, void* opaque) {
  static_cast<KafkaJobQueue*>(opaque)->delivered(*message);
}

}  // namespace

KafkaJobQueue::KafkaJobQueue(const AsyncJobsConfig& config, std::string source_name, MetricsRegistry& metrics)
    : config_(config),
      name_(std::move(source_name)),
      ack_timeout_(duration_or(config.has_ack_timeout(), config.ack_timeout(), kDefaultAckTimeout)),
      lookback_(duration_or(config.has_results_lookback(), config.results_lookback(), kDefaultLookback)),
      table_(config.max_tracked() ? config.max_tracked() : 100000,
             config.max_tracked_bytes() ? config.max_tracked_bytes() : 64u << 20) {
  auto refuse = [&](const std::string& field, const std::string& why) {
    throw std::invalid_argument("http source '" + name_ + "': async_jobs." + field + ": " + why);
  };
  if (config_.bootstrap().empty()) config_.set_bootstrap("127.0.0.1:9092");
  if (config_.topic().empty()) config_.set_topic("sluice.jobs");
  if (config_.results_topic().empty()) config_.set_results_topic("sluice.results");
  if (config_.max_pending() == 0) config_.set_max_pending(10000);
  if (config_.topic() == config_.results_topic()) refuse("results_topic", "is the same topic as `topic`");
  if (ack_timeout_ < kNanosPerSecond / 10) refuse("ack_timeout", "must be at least 100ms");
  const std::vector<std::string> entries(config_.properties().begin(), config_.properties().end());
  if (Status s = client_properties(config_.bootstrap(), "sluice-" + name_ + "-jobs", entries, &properties_); !s.ok()) {
    refuse("properties", s.message);
  }
  const Labels l{{"source", name_}};
  results_total_ = &metrics.counter("sluice_async_job_results_total", "Result lines read into the job table", l);
  forgotten_total_ =
      &metrics.counter("sluice_async_jobs_forgotten_total", "Jobs the table forgot to stay within its bounds", l);
  metrics.gauge_fn("sluice_async_jobs_pending", "Jobs written and not yet acknowledged (bounded by max_pending)", l,
                   [this] { return static_cast<double>(pending_.load()); });
  metrics.gauge_fn("sluice_async_jobs_tracked", "Jobs the table knows (bounded by max_tracked)", l,
                   [this] { return static_cast<double>(table_.size()); });
  metrics.gauge_fn("sluice_async_jobs_tracked_bytes", "Bytes the table holds (bounded by max_tracked_bytes)", l,
                   [this] { return static_cast<double>(table_.bytes()); });
}

KafkaJobQueue::~KafkaJobQueue() {
  stop();
  // An enqueue that raced with stop() (it passed the stopping check first) still gets its report.
  drain_producer(0);
  if (jobs_topic_) rd_kafka_topic_destroy(jobs_topic_);
}

void KafkaJobQueue::start() {
  if (started_) return;
  started_ = true;
  auto fail = [&](const Status& s) { throw std::runtime_error("http source '" + name_ + "': async_jobs: " + s.message); };
  std::vector<Property> producer_props = producer_properties(properties_);
  producer_props.emplace_back("message.timeout.ms", std::to_string(ack_timeout_ / 1'000'000));
  KafkaConf pconf;
  if (Status s = make_conf(producer_props, &pconf); !s.ok()) fail(s);
  rd_kafka_conf_set_dr_msg_cb(pconf.get(), queue_delivery_trampoline);
  rd_kafka_conf_set_opaque(pconf.get(), this);
  if (Status s = make_handle(RD_KAFKA_PRODUCER, std::move(pconf), &producer_); !s.ok()) fail(s);
  jobs_topic_ = rd_kafka_topic_new(producer_.get(), config_.topic().c_str(), nullptr);

  // group.id is required by the consumer API but unused: partitions are assigned, not
  // subscribed, and nothing is committed.
  std::vector<Property> consumer_props = {{"fetch.wait.max.ms", "100"}};
  consumer_props.insert(consumer_props.end(), properties_.begin(), properties_.end());
  consumer_props.insert(consumer_props.end(), {{"group.id", "sluice-job-table"},
                                               {"enable.auto.commit", "false"},
                                               {"enable.auto.offset.store", "false"},
                                               {"enable.partition.eof", "false"},
                                               {"auto.offset.reset", "latest"}});
  KafkaConf cconf;
  if (Status s = make_conf(consumer_props, &cconf); !s.ok()) fail(s);
  if (Status s = make_handle(RD_KAFKA_CONSUMER, std::move(cconf), &consumer_); !s.ok()) fail(s);
  rd_kafka_poll_set_consumer(consumer_.get());

  producer_thread_ = std::thread([this] {
    name_this_thread("sluice-jobq-p");
    while (!stopping_.load()) rd_kafka_poll(producer_.get(), 50);
  });
  consumer_thread_ = std::thread([this] {
    name_this_thread("sluice-jobq-c");
    consume_loop();
  });
}

void KafkaJobQueue::stop() {
  if (!started_ || stopped_) return;
  stopped_ = true;
  stopping_.store(true);  // enqueue refuses from here on
  if (producer_thread_.joinable()) producer_thread_.join();
  if (consumer_thread_.joinable()) consumer_thread_.join();
  // Records in flight get their acknowledgement (or their timeout) first: each has a client
  // waiting for a 202. rd_kafka_flush serves the delivery reports itself.
  drain_producer(ack_timeout_);
  if (consumer_) rd_kafka_consumer_close(consumer_.get());
}

void KafkaJobQueue::drain_producer(Nanos timeout) {
  if (!producer_) return;
  rd_kafka_flush(producer_.get(), static_cast<int>(timeout / 1'000'000));
  // What is left is answered kUnavailable by its purged report.
  rd_kafka_purge(producer_.get(), RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
  rd_kafka_poll(producer_.get(), 0);
}

void KafkaJobQueue::enqueue(http::JobRecord record, std::function<void(Status)> done) {
  // The handles live until the destructor, so a call racing with stop() is safe.
  if (!producer_ || stopping_.load()) {
    return done(Status::Error(StatusCode::kUnavailable, "the server is stopping"));
  }
  if (pending_.fetch_add(1) >= static_cast<std::int64_t>(config_.max_pending())) {
    pending_.fetch_sub(1);
    return done(Status::Error(StatusCode::kUnavailable, std::to_string(config_.max_pending()) +
                                                            " jobs are waiting for the broker (async_jobs.max_pending)"));
  }
  table_.queued(record.id, unix_ms(), record.tenant);
  auto* pending = new Pending{record.id, std::move(done)};
  // The client's trace context rides in a "traceparent" header as well as in the line, for
  // readers that follow the W3C convention for Kafka; librdkafka owns the headers once the call
  // succeeds.
  rd_kafka_headers_t* headers = rd_kafka_headers_new(1);
  if (!record.traceparent.empty()) {
    rd_kafka_header_add(headers, "traceparent", -1, record.traceparent.data(), static_cast<ssize_t>(record.traceparent.size()));
  }
  // RD_KAFKA_MSG_F_COPY: the record's bytes live in `record`, which goes out of scope.
  const rd_kafka_resp_err_t err = rd_kafka_producev(
      producer_.get(), RD_KAFKA_V_RKT(jobs_topic_), RD_KAFKA_V_PARTITION(RD_KAFKA_PARTITION_UA),
      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_VALUE(record.line.data(), record.line.size()),
      RD_KAFKA_V_KEY(record.id.data(), record.id.size()), RD_KAFKA_V_HEADERS(headers), RD_KAFKA_V_OPAQUE(pending),
      RD_KAFKA_V_END);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    rd_kafka_headers_destroy(headers);
    table_.forget_queued(pending->id);
    pending_.fetch_sub(1);
    auto callback = std::move(pending->done);
    delete pending;
    callback(Status::Error(StatusCode::kUnavailable, std::string("the producer refused the record: ") + rd_kafka_err2str(err)));
  }
}

void KafkaJobQueue::delivered(const rd_kafka_message_t& message) {
  std::unique_ptr<Pending> pending(static_cast<Pending*>(message._private));
  if (!pending) return;
  pending_.fetch_sub(1);
  if (message.err) {
    table_.forget_queued(pending->id);
    return pending->done(Status::Error(
        StatusCode::kUnavailable, std::string("the broker did not acknowledge it: ") + rd_kafka_err2str(message.err)));
  }
  pending->done(Status::Ok());
}

bool KafkaJobQueue::assign_new_partitions(bool first) {
  const rd_kafka_metadata_t* metadata = nullptr;
  rd_kafka_topic_t* topic = rd_kafka_topic_new(consumer_.get(), config_.results_topic().c_str(), nullptr);
  const rd_kafka_resp_err_t err = rd_kafka_metadata(consumer_.get(), 0, topic, &metadata, kMetadataTimeoutMs);
  rd_kafka_topic_destroy(topic);
  if (err || !metadata || metadata->topic_cnt != 1 || metadata->topics[0].err) {
    if (metadata) rd_kafka_metadata_destroy(metadata);
    return partitions_taken_ > 0;
  }
  const int count = metadata->topics[0].partition_cnt;
  rd_kafka_metadata_destroy(metadata);
  if (count <= partitions_taken_) return partitions_taken_ > 0;
  PartitionList list(rd_kafka_topic_partition_list_new(count - partitions_taken_));
  for (int p = partitions_taken_; p < count; ++p) {
    // At start: from results_lookback ago (a timestamp that offsets_for_times turns into an
    // offset), or the end. A partition added later: its beginning, since all of it is new.
    rd_kafka_topic_partition_list_add(list.get(), config_.results_topic().c_str(), p)->offset =
        !first ? RD_KAFKA_OFFSET_BEGINNING : lookback_ > 0 ? unix_ms() - lookback_ / 1'000'000 : RD_KAFKA_OFFSET_END;
  }
  if (first && lookback_ > 0) {
    if (rd_kafka_offsets_for_times(consumer_.get(), list.get(), kMetadataTimeoutMs) != RD_KAFKA_RESP_ERR_NO_ERROR) {
      // The broker cannot say: start at the end rather than replay the whole topic.
      for (int i = 0; i < list->cnt; ++i) list->elems[i].offset = RD_KAFKA_OFFSET_END;
    }
    // A partition with nothing that recent answers -1: its end.
    for (int i = 0; i < list->cnt; ++i) {
      if (list->elems[i].offset < 0) list->elems[i].offset = RD_KAFKA_OFFSET_END;
    }
  }
  if (rd_kafka_error_t* e = rd_kafka_incremental_assign(consumer_.get(), list.get())) {
    std::fprintf(stderr, "sluice: http source '%s': async_jobs: cannot assign %s: %s\n", name_.c_str(),
                 config_.results_topic().c_str(), rd_kafka_error_string(e));
    rd_kafka_error_destroy(e);
    return partitions_taken_ > 0;
  }
  partitions_taken_ = count;
  return true;
}

void KafkaJobQueue::consume_loop() {
  Nanos next_metadata = 0;
  auto now = [] { return std::chrono::duration_cast<std::chrono::nanoseconds>(
                             std::chrono::steady_clock::now().time_since_epoch())
                      .count(); };
  while (!stopping_.load()) {
    if (now() >= next_metadata) {
      const bool first = partitions_taken_ == 0;
      if (assign_new_partitions(first)) assigned_.store(true, std::memory_order_release);
      // Until the topic is there, look again each second; then every 30 s for new partitions.
      next_metadata = now() + (assigned_.load() ? kMetadataEvery : kNanosPerSecond);
    }
    rd_kafka_message_t* message = rd_kafka_consumer_poll(consumer_.get(), 100);
    if (!message) continue;
    if (!message->err) take_result(*message);
    rd_kafka_message_destroy(message);
  }
}

void KafkaJobQueue::take_result(const rd_kafka_message_t& message) {
  const auto* bytes = static_cast<const char*>(message.payload);
  std::string line(bytes ? bytes : "", message.len);
  const auto parsed = nlohmann::json::parse(line, nullptr, false);
  if (!parsed.is_object() || !parsed.contains("id") || !parsed["id"].is_string()) return;
  std::string tenant;  // the job's, copied into x_sluice by the worker (job_codec.h)
  if (const auto x = parsed.find("x_sluice"); x != parsed.end() && x->is_object()) {
    if (const auto t = x->find("tenant"); t != x->end() && t->is_string()) tenant = t->get<std::string>();
  }
  const std::uint64_t evicted_before = table_.evicted();
  table_.finished(parsed["id"].get<std::string>(), std::move(line), std::move(tenant));
  results_total_->inc();
  forgotten_total_->inc(static_cast<double>(table_.evicted() - evicted_before));
}

}  // namespace sluice::kafka
