#include "connectors/kafka/kafka_source.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>

#include "connectors/http/openai_request.h"
#include "connectors/kafka/job_request.h"
#include "connectors/kafka/job_sink.h"
#include "connectors/kafka/kafka_source_impl.h"
#include "graph/external_ids.h"
#include "graph/thread_names.h"
#include "graph/proto_duration.h"

namespace sluice::kafka {
namespace {

std::string or_default(const std::string& value, const char* fallback) { return value.empty() ? fallback : value; }

// The longest a consumer poll blocks: the loop's granularity for due retries, held jobs,
// commits and resuming. Records themselves wake it at once.
constexpr Nanos kPollSlice = 100 * 1'000'000;
// How long the loop holds off polling at max_in_flight before it pauses the partitions instead.
constexpr Nanos kFullPauseAfter = 100 * 1'000'000;
// Its wait between checks meanwhile.
constexpr Nanos kHoldSlice = 1'000'000;
// A job refused at intake is offered again after its Retry-After, within these bounds.
constexpr Nanos kMinIntakeBackoff = 10 * 1'000'000;
constexpr Nanos kMaxIntakeBackoff = kNanosPerSecond;
// How long stop() serves the revocation after unsubscribing before it closes anyway: the
// revocation is the client's own (no broker round trip but the commit), so this is a bound for a
// broker that does not answer the commit, not a wait.
constexpr Nanos kLeaveGroupTimeout = 5 * kNanosPerSecond;

void rebalance_trampoline(rd_kafka_t* consumer, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* partitions,
                          void* opaque) {
  static_cast<KafkaSource::Impl*>(opaque)->on_rebalance(consumer, err, partitions);
}

void source_delivery_trampoline(rd_kafka_t*, const rd_kafka_message_t* message, void* opaque) {
  static_cast<KafkaSource::Impl*>(opaque)->on_delivery(message);
}

std::vector<OffsetTracker::Partition> partitions_of(const rd_kafka_topic_partition_list_t* list) {
  std::vector<OffsetTracker::Partition> out;
  for (int i = 0; list && i < list->cnt; ++i) out.emplace_back(list->elems[i].topic, list->elems[i].partition);
  return out;
}

}  // namespace

KafkaSource::Impl::Impl(const KafkaSourceConfig& c, std::string source_name, http::RequestIntake& in)
    : config(c), name(std::move(source_name)), intake(in), random(std::random_device{}()) {
  auto refuse = [&](const std::string& field, const std::string& why) {
    throw std::invalid_argument("source '" + name + "': config." + field + ": " + why);
  };
  config.set_bootstrap(or_default(config.bootstrap(), "127.0.0.1:9092"));
  config.set_group(or_default(config.group(), "sluice"));
  config.set_topic(or_default(config.topic(), "sluice.jobs"));
  config.set_results_topic(or_default(config.results_topic(), "sluice.results"));
  config.set_retry_topic(or_default(config.retry_topic(), "sluice.retry"));
  config.set_dead_letter_topic(or_default(config.dead_letter_topic(), "sluice.dlq"));
  config.set_default_priority(or_default(config.default_priority(), "P2"));
  if (config.max_in_flight() == 0) config.set_max_in_flight(256);
  if (config.max_attempts() == 0) config.set_max_attempts(5);
  if (config.max_delayed() == 0) config.set_max_delayed(10000);
  std::set<std::string> topics;
  for (const auto& [field, topic] : {std::pair<const char*, std::string>{"topic", config.topic()},
                                     {"results_topic", config.results_topic()},
                                     {"retry_topic", config.retry_topic()},
                                     {"dead_letter_topic", config.dead_letter_topic()}}) {
    if (!topics.insert(topic).second) {
      refuse(field, "'" + topic + "' is already another of this source's topics; jobs, results, retries and dead letters need four");
    }
  }
  default_class = intake.class_index(config.default_priority());
  if (default_class < 0) refuse("default_priority", "'" + config.default_priority() + "' is not a priority class");
  models.assign(config.models().begin(), config.models().end());
  answers_embeddings = intake.answers_embeddings();  // fixed once the pipeline is built
  retry.max_attempts = config.max_attempts();
  retry.base_delay = duration_or(config.has_base_delay(), config.base_delay(), kNanosPerSecond);
  retry.max_delay = duration_or(config.has_max_delay(), config.max_delay(), 300 * kNanosPerSecond);
  if (retry.max_delay < retry.base_delay) refuse("max_delay", "is shorter than base_delay");
  commit_interval = duration_or(config.has_commit_interval(), config.commit_interval(), kNanosPerSecond);
  if (commit_interval <= 0) commit_interval = kNanosPerSecond;

  // Sluice's settings first, so the file's properties can override them (e.g. a broker that
  // needs a different client.id), except what the guarantees rest on, which go last.
  const std::vector<std::string> entries(config.properties().begin(), config.properties().end());
  if (Status s = client_properties(config.bootstrap(), "sluice-" + name, entries, &properties); !s.ok()) {
    refuse("properties", s.message);
  }

  MetricsRegistry& m = intake.metrics();
  const Labels l{{"source", name}};
  auto outcome = [&](const char* o) {
    Labels with = l;
    with.emplace_back("outcome", o);
    return &m.counter("sluice_kafka_jobs_total", "Kafka jobs by what was acknowledged for them", with);
  };
  completed_total = outcome("completed");
  retried_total = outcome("retried");
  dead_lettered_total = outcome("dead_lettered");
  handed_back_total = outcome("handed_back");
  records_total = &m.counter("sluice_kafka_records_total", "Records taken from the jobs and retry topics", l);
  intake_refusals_total = &m.counter("sluice_kafka_intake_refusals_total",
                                     "Jobs the pipeline refused at intake; the partitions paused until it took them", l);
  delivery_errors_total =
      &m.counter("sluice_kafka_delivery_errors_total", "Productions that failed and were produced again", l);
  commits_total = &m.counter("sluice_kafka_commits_total", "Offset commits sent", l);
  rebalances_total = &m.counter("sluice_kafka_rebalances_total", "Partition assignments and revocations", l);
  job_seconds = &m.histogram("sluice_kafka_job_seconds", "From a record's take to the acknowledgement of what was written for it", l);
  m.gauge_fn("sluice_kafka_in_flight_jobs", "Jobs taken and not yet acknowledged (bounded by max_in_flight)", l,
             [this] { return static_cast<double>(in_flight.load()); });
  m.gauge_fn("sluice_kafka_delayed_jobs", "Retry records held until due (bounded by max_delayed)", l,
             [this] { return static_cast<double>(delayed_count.load()); });
  m.gauge_fn("sluice_kafka_paused", "1 while every partition is paused (backpressure or stopping)", l,
             [this] { return paused_all.load() ? 1.0 : 0.0; });
  m.gauge_fn("sluice_kafka_assigned_partitions", "Partitions of the jobs and retry topics this member owns now", l,
             [this] { return static_cast<double>(assigned_partitions.load()); });
}

KafkaSource::KafkaSource(const KafkaSourceConfig& config, std::string source_name, http::RequestIntake& intake)
    : impl_(std::make_unique<Impl>(config, std::move(source_name), intake)) {}

KafkaSource::KafkaSource(const KafkaSourceConfig& config, std::string source_name, Pipeline& pipeline)
    : owned_intake_(http::intake_for(pipeline)),
      impl_(std::make_unique<Impl>(config, std::move(source_name), *owned_intake_)) {}

KafkaSource::~KafkaSource() { stop(0); }

const std::string& KafkaSource::name() const { return impl_->name; }

void KafkaSource::start() {
  Impl& s = *impl_;
  // Producer: idempotent, so its own retries neither duplicate nor reorder; every replica acks.
  const std::vector<Property> producer_props = producer_properties(s.properties);
  KafkaConf pconf;
  if (Status st = make_conf(producer_props, &pconf); !st.ok()) throw std::runtime_error("source '" + s.name + "': " + st.message);
  rd_kafka_conf_set_dr_msg_cb(pconf.get(), source_delivery_trampoline);
  rd_kafka_conf_set_opaque(pconf.get(), &s);
  if (Status st = make_handle(RD_KAFKA_PRODUCER, std::move(pconf), &s.producer); !st.ok()) {
    throw std::runtime_error("source '" + s.name + "': " + st.message);
  }
  // Consumer: commits by hand (OffsetTracker), from the start of a partition with no commit.
  // fetch.wait.max.ms 100 (librdkafka's default is 500; before the file's settings, which may
  // change it): how long a fetch waits on the broker for records; it bounds how late a due
  // retry is seen, at five idle fetches a second.
  std::vector<Property> consumer_props = {{"fetch.wait.max.ms", "100"}};
  consumer_props.insert(consumer_props.end(), s.properties.begin(), s.properties.end());
  consumer_props.insert(consumer_props.end(), {{"group.id", s.config.group()},
                                               {"enable.auto.commit", "false"},
                                               {"enable.auto.offset.store", "false"},
                                               {"enable.partition.eof", "false"}});
  bool has_reset = false;
  for (const auto& [k, v] : s.properties) has_reset |= k == "auto.offset.reset";
  if (!has_reset) consumer_props.emplace_back("auto.offset.reset", "earliest");
  KafkaConf cconf;
  if (Status st = make_conf(consumer_props, &cconf); !st.ok()) throw std::runtime_error("source '" + s.name + "': " + st.message);
  rd_kafka_conf_set_rebalance_cb(cconf.get(), rebalance_trampoline);
  rd_kafka_conf_set_opaque(cconf.get(), &s);
  if (Status st = make_handle(RD_KAFKA_CONSUMER, std::move(cconf), &s.consumer); !st.ok()) {
    throw std::runtime_error("source '" + s.name + "': " + st.message);
  }
  for (const std::string* t : {&s.config.results_topic(), &s.config.retry_topic(), &s.config.dead_letter_topic()}) {
    s.output_topics.push_back(rd_kafka_topic_new(s.producer.get(), t->c_str(), nullptr));
  }
  rd_kafka_poll_set_consumer(s.consumer.get());
  s.consumer_queue.reset(rd_kafka_queue_get_consumer(s.consumer.get()));
  PartitionList topics(rd_kafka_topic_partition_list_new(2));
  rd_kafka_topic_partition_list_add(topics.get(), s.config.topic().c_str(), RD_KAFKA_PARTITION_UA);
  rd_kafka_topic_partition_list_add(topics.get(), s.config.retry_topic().c_str(), RD_KAFKA_PARTITION_UA);
  if (rd_kafka_resp_err_t err = rd_kafka_subscribe(s.consumer.get(), topics.get())) {
    throw std::runtime_error("source '" + s.name + "': cannot subscribe to " + s.config.topic() + " and " +
                             s.config.retry_topic() + ": " + rd_kafka_err2str(err));
  }
  s.producer_thread = std::thread([&s] {
    name_this_thread("sluice-kafka-p");
    while (!s.producer_stopping.load()) rd_kafka_poll(s.producer.get(), 50);
  });
  s.consumer_thread = std::thread([&s] {
    name_this_thread("sluice-kafka-c");
    s.consume_loop();
  });
}

void KafkaSource::stop_accepting() { impl_->accepting.store(false); }

void KafkaSource::stop(Nanos flush_timeout) {
  Impl& s = *impl_;
  if (s.stopped) return;
  s.stopped = true;
  s.accepting.store(false);
  s.stopping.store(true);
  if (s.consumer_thread.joinable()) s.consumer_thread.join();
  if (s.producer) {
    // Deliveries still due acknowledge their jobs; what is not delivered by then stays uncommitted.
    const Nanos until = s.intake.clock().now() + flush_timeout;
    while (s.intake.clock().now() < until) {
      s.produce_pending(Nanos{INT64_MAX});
      if (rd_kafka_outq_len(s.producer.get()) == 0) break;
      rd_kafka_flush(s.producer.get(), 100);
    }
    s.producer_stopping.store(true);
    if (s.producer_thread.joinable()) s.producer_thread.join();
    for (rd_kafka_topic_t* t : s.output_topics) rd_kafka_topic_destroy(t);
    s.output_topics.clear();
  }
  if (s.consumer) {
    s.commit(/*sync=*/true, /*all=*/false);
    // Leave the group first, then close. librdkafka 2.0's rd_kafka_consumer_close serves pending
    // rebalance events on this thread, and an assign call made from one while the group
    // sub-system terminates can wait forever for a reply that is purged (confluentinc/librdkafka
    // #4884; seen here once: a worker of two, both sent SIGTERM at once after 20,000 jobs, hung
    // in close). Unsubscribing and serving the revocation here, while the group is alive, leaves
    // close nothing to call back; what is done is committed by the revocation (on_rebalance).
    s.leave_group(kLeaveGroupTimeout);
    rd_kafka_consumer_close(s.consumer.get());
  }
  s.consumer_queue.reset();
  s.consumer.reset();
  s.producer.reset();
}

KafkaSourceCounts KafkaSource::counts() const {
  const Impl& s = *impl_;
  KafkaSourceCounts c;
  c.records = static_cast<std::uint64_t>(s.records_total->value());
  c.completed = static_cast<std::uint64_t>(s.completed_total->value());
  c.retried = static_cast<std::uint64_t>(s.retried_total->value());
  c.dead_lettered = static_cast<std::uint64_t>(s.dead_lettered_total->value());
  c.handed_back = static_cast<std::uint64_t>(s.handed_back_total->value());
  c.intake_refusals = static_cast<std::uint64_t>(s.intake_refusals_total->value());
  c.delivery_errors = static_cast<std::uint64_t>(s.delivery_errors_total->value());
  c.commits = static_cast<std::uint64_t>(s.commits_total->value());
  c.rebalances = static_cast<std::uint64_t>(s.rebalances_total->value());
  c.in_flight = s.in_flight.load();
  c.in_flight_peak = s.in_flight_peak.load();
  c.delayed = s.delayed_count.load();
  c.paused = s.paused_all.load();
  c.assigned_partitions = s.assigned_partitions.load();
  return c;
}

// ---- the consumer loop

void KafkaSource::Impl::consume_loop() {
  while (!stopping.load()) {
    const Nanos now = intake.clock().now();
    produce_pending(now);
    if (!accepting.load()) {
      if (blocked) hand_back(std::exchange(blocked, nullptr));
    } else if (blocked && now >= blocked_retry_at) {
      submit_job(std::exchange(blocked, nullptr));
    }
    if (accepting.load() && !blocked) release_due_retries();
    apply_pause(now);
    if (now - last_commit >= commit_interval) {
      commit(/*sync=*/false, /*all=*/false);
      last_commit = now;
    }
    if (holding_for_acks()) {
      // The bound holds without pausing: nothing is polled until acknowledgements bring the
      // jobs in flight down to the resume mark (or kFullPauseAfter passes and apply_pause pauses).
      std::this_thread::sleep_for(std::chrono::nanoseconds(kHoldSlice));
      continue;
    }
    Nanos wait = kPollSlice;
    if (blocked) wait = std::min(wait, std::max<Nanos>(0, blocked_retry_at - now));
    if (!delayed.empty()) {
      wait = std::min(wait, std::max<Nanos>(0, (delayed.top().first - now_unix_ms()) * 1'000'000));
    }
    rd_kafka_message_t* message = rd_kafka_consumer_poll(consumer.get(), static_cast<int>(std::max<Nanos>(1, wait / 1'000'000)));
    if (!message) continue;
    handle_message(message);
    rd_kafka_message_destroy(message);
  }
}

void KafkaSource::Impl::handle_message(rd_kafka_message_t* message) {
  if (message->err) {
    // Consumer errors are reported as messages; librdkafka recovers from the transient ones.
    if (message->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      std::fprintf(stderr, "sluice: kafka source '%s': %s\n", name.c_str(), rd_kafka_message_errstr(message));
    }
    return;
  }
  auto task = std::make_shared<JobTask>();
  task->topic = rd_kafka_topic_name(message->rkt);
  task->partition = message->partition;
  task->offset = message->offset;
  task->epoch = offsets.take(task->topic, task->partition, task->offset);
  if (task->epoch == 0) return;  // not ours (any more): the owner reads it
  if (message->key) task->key.assign(static_cast<const char*>(message->key), message->key_len);
  if (message->payload) task->original.assign(static_cast<const char*>(message->payload), message->len);
  rd_kafka_headers_t* headers = nullptr;
  const void* value = nullptr;
  std::size_t size = 0;
  if (rd_kafka_message_headers(message, &headers) == RD_KAFKA_RESP_ERR_NO_ERROR &&
      rd_kafka_header_get_last(headers, "traceparent", &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR && value &&
      http::valid_traceparent(std::string_view(static_cast<const char*>(value), size))) {
    task->header_traceparent.assign(static_cast<const char*>(value), size);
    task->traceparent_out = task->header_traceparent;  // what a dead letter of an undecodable record carries
  }
  task->taken_at = intake.clock().now();
  records_total->inc();
  const std::size_t now_in_flight = in_flight.fetch_add(1) + 1;
  std::size_t peak = in_flight_peak.load();
  while (now_in_flight > peak && !in_flight_peak.compare_exchange_weak(peak, now_in_flight)) {
  }

  DecodedJob decoded = decode_job(task->original, RecordRef{task->topic, task->partition, task->offset, task->key});
  if (auto* failure = std::get_if<DecodeFailure>(&decoded)) {
    task->failure = std::move(*failure);
    return dead_letter(task, JobError{task->failure.code, task->failure.message, 400, 1, now_unix_ms()});
  }
  task->decoded = true;
  task->job = std::move(std::get<Job>(decoded));
  if (task->topic == config.retry_topic() && task->job.not_before_unix_ms > now_unix_ms()) {
    // Held until due; counted as delayed, not in flight.
    in_flight.fetch_sub(1);
    delayed_count.fetch_add(1);
    delayed.emplace(task->job.not_before_unix_ms, task);
    return;
  }
  submit_job(task);
}

void KafkaSource::Impl::release_due_retries() {
  const std::int64_t now_ms = now_unix_ms();
  while (!delayed.empty() && delayed.top().first <= now_ms && !blocked &&
         in_flight.load() < config.max_in_flight()) {
    JobTaskPtr task = delayed.top().second;
    delayed.pop();
    delayed_count.fetch_sub(1);
    in_flight.fetch_add(1);
    submit_job(task);
  }
}

void KafkaSource::Impl::submit_job(const JobTaskPtr& task) {
  const Job& job = task->job;
  RequestInput input;
  std::optional<JobError> refused = job_request_input(job, models, &input);
  if (!refused && input.kind == RequestInput::Kind::kEmbed && !answers_embeddings) {
    refused = JobError{"no_embeddings_node", "url /v1/embeddings: this worker's pipeline has no (enabled) `embeddings` node",
                       404};
  }
  if (refused) {
    refused->attempt = job.attempt + 1;
    refused->at_unix_ms = now_unix_ms();
    return dead_letter(task, *refused);
  }
  int priority = default_class;
  if (!job.priority.empty()) {
    priority = intake.class_index(job.priority);
    if (priority < 0) {
      return dead_letter(task, JobError{"invalid_value",
                                        "priority '" + job.priority + "' is not a priority class of this pipeline", 400,
                                        job.attempt + 1, now_unix_ms()});
    }
  }
  const Nanos now = intake.clock().now();
  Nanos deadline = kNoDeadline;
  if (job.deadline_unix_ms > 0) {
    const std::int64_t left_ms = job.deadline_unix_ms - now_unix_ms();
    if (left_ms <= 0) {
      return dead_letter(task, JobError{"deadline_exceeded", "the job's deadline passed before it could be attempted",
                                        504, job.attempt + 1, now_unix_ms()});
    }
    deadline = now + left_ms * 1'000'000;
  }
  const std::uint64_t id = intake.next_request_id();
  std::string external_id = external_request_id(
      input.kind == RequestInput::Kind::kRetrieve ? "retr"
      : input.kind == RequestInput::Kind::kEmbed  ? "embd"
      : input.kind == RequestInput::Kind::kChat   ? "chatcmpl"
                                                  : "cmpl",
      id);
  auto sink = std::make_shared<JobSink>(this, task, input.kind, external_id, input.model, intake.stage_names());
  auto request = std::make_shared<Request>(id, std::move(input), sink);
  request->priority = static_cast<std::uint8_t>(priority);
  request->arrival = now;
  if (deadline != kNoDeadline) request->deadline = deadline;
  request->external_id = std::move(external_id);
  request->want_timings = true;
  // The job's own traceparent field, else the record's header (W3C trace context over Kafka).
  if (!job.traceparent.empty() && http::valid_traceparent(job.traceparent)) request->traceparent = job.traceparent;
  else request->traceparent = task->header_traceparent;
  // With tracing on the records this job writes name its request's span; drawn before submit,
  // which may complete the request at once.
  if (std::optional<SpanContext> span = intake.start_span(request->traceparent)) {
    request->span = *span;
    task->traceparent_out = span->traceparent();
  } else {
    task->traceparent_out = request->traceparent;
  }
  request->tenant = job.tenant;  // caches and fairness scoped as the HTTP request would have been
  task->submitted_at = now;
  task->completed_in_submit = false;
  task->submitting_thread.store(std::this_thread::get_id(), std::memory_order_release);
  const Status admitted = intake.submit(name, request);
  task->submitting_thread.store(std::thread::id{}, std::memory_order_release);
  if (admitted.ok()) {
    if (task->completed_in_submit) attempt_ended(task, sink->take_end());
    return;
  }
  // Refused at intake: the sink has seen the completion and left it to us.
  if (admitted.code == StatusCode::kOverloaded && accepting.load()) {
    intake_refusals_total->inc();
    blocked = task;
    const Nanos backoff = static_cast<Nanos>(admitted.retry_after_seconds * static_cast<double>(kNanosPerSecond));
    blocked_retry_at = now + std::clamp(backoff, kMinIntakeBackoff, kMaxIntakeBackoff);
    return;
  }
  if (admitted.code == StatusCode::kUnavailable || admitted.code == StatusCode::kOverloaded) return hand_back(task);
  attempt_ended(task, sink->take_end());
}

void KafkaSource::Impl::hand_back(const JobTaskPtr&) {
  // Not acknowledged: the offset stays uncommitted and the partition's next reader redoes it.
  handed_back_total->inc();
  in_flight.fetch_sub(1);
}

void KafkaSource::Impl::apply_pause(Nanos now) {
  const std::size_t now_in_flight = in_flight.load();
  if (now_in_flight >= config.max_in_flight() && !full_in_flight) {
    full_in_flight = true;
    full_since = now;
  }
  if (now_in_flight <= resume_in_flight()) full_in_flight = false;
  waiting_for_acks.store(full_in_flight);
  const bool all = !accepting.load() || blocked || (full_in_flight && now - full_since >= kFullPauseAfter);
  // Hysteresis for the retry topic: paused at max_delayed held, resumed under half.
  const std::size_t held = delayed_count.load();
  if (held >= config.max_delayed()) retry_full = true;
  if (held < config.max_delayed() / 2) retry_full = false;
  paused_all.store(all);
  PartitionList pause(rd_kafka_topic_partition_list_new(0)), resume(rd_kafka_topic_partition_list_new(0));
  for (auto& [p, paused] : paused_now) {
    const bool want = all || (retry_full && p.first == config.retry_topic());
    if (want == paused) continue;
    rd_kafka_topic_partition_list_add(want ? pause.get() : resume.get(), p.first.c_str(), p.second);
    paused = want;
  }
  if (pause->cnt) rd_kafka_pause_partitions(consumer.get(), pause.get());
  if (resume->cnt) rd_kafka_resume_partitions(consumer.get(), resume.get());
}

void KafkaSource::Impl::commit(bool sync, bool all) {
  if (!consumer) return;
  const auto due = offsets.commits_due(all);
  if (due.empty()) return;
  PartitionList list(rd_kafka_topic_partition_list_new(static_cast<int>(due.size())));
  for (const auto& c : due) rd_kafka_topic_partition_list_add(list.get(), c.topic.c_str(), c.partition)->offset = c.offset;
  if (rd_kafka_resp_err_t err = rd_kafka_commit(consumer.get(), list.get(), sync ? 0 : 1)) {
    if (err != RD_KAFKA_RESP_ERR__NO_OFFSET) {
      std::fprintf(stderr, "sluice: kafka source '%s': commit failed: %s\n", name.c_str(), rd_kafka_err2str(err));
    }
    return;
  }
  commits_total->inc();
}

void KafkaSource::Impl::forget(const std::vector<OffsetTracker::Partition>& revoked) {
  const std::set<OffsetTracker::Partition> gone(revoked.begin(), revoked.end());
  auto is_gone = [&](const JobTaskPtr& t) { return gone.count({t->topic, t->partition}) != 0; };
  if (blocked && is_gone(blocked)) hand_back(std::exchange(blocked, nullptr));
  std::vector<std::pair<std::int64_t, JobTaskPtr>> kept;
  while (!delayed.empty()) {
    auto entry = delayed.top();
    delayed.pop();
    if (is_gone(entry.second)) {
      delayed_count.fetch_sub(1);
      handed_back_total->inc();
    } else {
      kept.push_back(std::move(entry));
    }
  }
  for (auto& e : kept) delayed.push(std::move(e));
  for (const auto& p : revoked) paused_now.erase(p);
}

void KafkaSource::Impl::leave_group(Nanos timeout) {
  if (rd_kafka_resp_err_t err = rd_kafka_unsubscribe(consumer.get())) {
    std::fprintf(stderr, "sluice: kafka source '%s': unsubscribe failed: %s\n", name.c_str(), rd_kafka_err2str(err));
    return;
  }
  const Nanos until = intake.clock().now() + timeout;
  while (intake.clock().now() < until) {
    // Serves the revocation's callback; a record fetched before it is not taken (the partition's
    // next owner reads it from the committed offset).
    if (rd_kafka_message_t* m = rd_kafka_consumer_poll(consumer.get(), 20)) rd_kafka_message_destroy(m);
    rd_kafka_topic_partition_list_t* assigned = nullptr;
    if (rd_kafka_assignment(consumer.get(), &assigned) != RD_KAFKA_RESP_ERR_NO_ERROR) return;
    const bool none = assigned->cnt == 0;
    rd_kafka_topic_partition_list_destroy(assigned);
    if (none && rd_kafka_queue_length(consumer_queue.get()) == 0) return;
  }
  std::fprintf(stderr, "sluice: kafka source '%s': partitions still assigned %.1f s after unsubscribing; closing anyway\n",
               name.c_str(), static_cast<double>(timeout) / kNanosPerSecond);
}

void KafkaSource::Impl::on_rebalance(rd_kafka_t* rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* partitions) {
  rebalances_total->inc();
  const bool cooperative = std::string(rd_kafka_rebalance_protocol(rk)) == "COOPERATIVE";
  const auto list = partitions_of(partitions);
  if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
    offsets.assign(list);
    for (const auto& p : list) paused_now[p] = false;
    if (cooperative) {
      if (rd_kafka_error_t* e = rd_kafka_incremental_assign(rk, partitions)) rd_kafka_error_destroy(e);
      assigned_partitions.fetch_add(static_cast<int>(list.size()));
    } else {
      rd_kafka_assign(rk, partitions);
      assigned_partitions.store(static_cast<int>(list.size()));
    }
    return;
  }
  // Revoked (or lost): commit what is done, then forget the rest; the new owner redoes it.
  const auto done = offsets.commits_for(list);
  if (!done.empty() && err == RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS) {
    PartitionList commit_list(rd_kafka_topic_partition_list_new(static_cast<int>(done.size())));
    for (const auto& c : done) rd_kafka_topic_partition_list_add(commit_list.get(), c.topic.c_str(), c.partition)->offset = c.offset;
    if (rd_kafka_commit(rk, commit_list.get(), 0) == RD_KAFKA_RESP_ERR_NO_ERROR) commits_total->inc();
  }
  offsets.revoke(list);
  forget(list);
  if (cooperative) {
    if (rd_kafka_error_t* e = rd_kafka_incremental_unassign(rk, partitions)) rd_kafka_error_destroy(e);
    assigned_partitions.fetch_sub(static_cast<int>(list.size()));
  } else {
    rd_kafka_assign(rk, nullptr);
    assigned_partitions.store(0);
  }
}

std::int64_t KafkaSource::Impl::now_unix_ms() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace sluice::kafka
