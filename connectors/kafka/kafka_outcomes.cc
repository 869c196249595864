// The outcome side of KafkaSource (kafka_source_impl.h): what the end of each attempt writes,
// and the delivery reports that acknowledge it.
#include <cstdio>

#include "connectors/http/openai_response.h"
#include "connectors/kafka/kafka_source_impl.h"

namespace sluice::kafka {
namespace {

// A production in librdkafka's hands, until its delivery report.
struct Delivery {
  JobTaskPtr task;
  std::string topic, key, payload;
};

// A production that failed (full local queue, or a delivery that failed for good) is tried
// again after this pause: long enough not to spin against a broker that is down, short enough
// that a broker back up sees the record within the second.
constexpr Nanos kReproducePause = 500 * 1'000'000;

JobError error_of(const Status& status, std::uint32_t attempt, std::int64_t at_ms) {
  const http::ApiError e = http::error_for_status(status);
  return JobError{e.code.empty() ? std::string(status_code_name(status.code)) : e.code, e.message, e.status, attempt, at_ms};
}

}  // namespace

void KafkaSource::Impl::attempt_ended(const JobTaskPtr& task, AttemptEnd end) {
  Job& job = task->job;
  const std::uint32_t attempt = job.attempt + 1;
  if (end.status.ok()) {
    JobOutcome outcome;
    outcome.ok = true;
    outcome.status_code = 200;
    outcome.request_id = end.request_id;
    outcome.body = std::move(end.body);
    outcome.attempts = attempt;
    outcome.timings_json = std::move(end.timings_json);
    outcome.written_by_sluice = true;  // JobSink's writers (job_sink.h)
    task->written = JobTask::Written::kResult;
    task->deliveries_pending.store(1);
    return produce(config.results_topic(), job.id, encode_result(job, outcome), task);
  }
  const bool deadline_passed = job.deadline_unix_ms > 0 && now_unix_ms() >= job.deadline_unix_ms;
  switch (judge_attempt(end.status, attempt, deadline_passed, retry)) {
    case AttemptVerdict::kHandBack:
      return hand_back(task);
    case AttemptVerdict::kDeadLetter: {
      // The dead letter carries every error, this attempt's last.
      const JobError last = error_of(end.status, attempt, now_unix_ms());
      job.attempt = attempt;
      job.errors.push_back(last);
      return dead_letter(task, last);
    }
    case AttemptVerdict::kRetry:
      break;
  }
  double unit;
  {
    MutexLock lock(random_mu);
    unit = std::uniform_real_distribution<double>(0.0, 1.0)(random);
  }
  const Nanos delay = retry_delay(retry, attempt, end.status.retry_after_seconds, unit);
  Job next = job;
  next.attempt = attempt;
  next.errors.push_back(error_of(end.status, attempt, now_unix_ms()));
  next.not_before_unix_ms = now_unix_ms() + delay / 1'000'000;
  task->written = JobTask::Written::kRetry;
  task->deliveries_pending.store(1);
  produce(config.retry_topic(), next.id, encode_job(next), task);
}

void KafkaSource::Impl::dead_letter(const JobTaskPtr& task, const JobError& reason) {
  DeadLetterInput letter;
  letter.job = task->decoded ? &task->job : nullptr;
  letter.failure = task->decoded ? nullptr : &task->failure;
  letter.encoding = task->decoded ? task->job.encoding : task->failure.encoding;
  letter.original = task->original;
  letter.source = RecordRef{task->topic, task->partition, task->offset, task->key};
  letter.reason = reason;
  letter.attempts = reason.attempt;
  // The error result keeps the results topic one line per job, as an OpenAI batch's output
  // and error files together; an undecodable record answers under the id decode_job gave it.
  Job undecoded;  // what is known of a record that is not a job: its ids and encoding
  if (!task->decoded) {
    undecoded.id = task->failure.id;
    undecoded.custom_id = task->failure.custom_id;
    undecoded.encoding = task->failure.encoding;
  }
  const Job& job = task->decoded ? task->job : undecoded;
  JobOutcome outcome;
  outcome.ok = false;
  outcome.error = reason;
  outcome.attempts = reason.attempt;
  task->written = JobTask::Written::kDeadLetter;
  task->deliveries_pending.store(2);
  produce(config.dead_letter_topic(), job.id, encode_dead_letter(letter), task);
  produce(config.results_topic(), job.id, encode_result(job, outcome), task);
}

void KafkaSource::Impl::produce(const std::string& topic, const std::string& key, std::string payload, const JobTaskPtr& task) {
  auto* d = new Delivery{task, topic, key, std::move(payload)};
  // The job's trace context rides in a "traceparent" header (W3C trace context over Kafka), so
  // whoever reads the result, retry or dead letter continues the same trace.
  rd_kafka_headers_t* headers = rd_kafka_headers_new(1);
  if (!task->traceparent_out.empty()) {
    rd_kafka_header_add(headers, "traceparent", -1, task->traceparent_out.data(),
                        static_cast<ssize_t>(task->traceparent_out.size()));
  }
  // The payload is ours until the report (no copy); the opaque brings it back. The headers are
  // librdkafka's once the call succeeds.
  const rd_kafka_resp_err_t err = rd_kafka_producev(
      producer.get(), RD_KAFKA_V_TOPIC(d->topic.c_str()), RD_KAFKA_V_KEY(d->key.data(), d->key.size()),
      RD_KAFKA_V_VALUE(d->payload.data(), d->payload.size()), RD_KAFKA_V_HEADERS(headers), RD_KAFKA_V_OPAQUE(d),
      RD_KAFKA_V_END);
  if (err == RD_KAFKA_RESP_ERR_NO_ERROR) return;
  rd_kafka_headers_destroy(headers);
  delivery_errors_total->inc();
  {
    MutexLock lock(pending_mu);
    pending.push_back({intake.clock().now() + kReproducePause, std::move(d->topic), std::move(d->key), std::move(d->payload),
                       std::move(d->task)});
  }
  delete d;
}

void KafkaSource::Impl::on_delivery(const rd_kafka_message_t* message) {
  std::unique_ptr<Delivery> d(static_cast<Delivery*>(message->_private));
  if (message->err) {
    // librdkafka has retried already (idempotently) until message.timeout.ms: try again later,
    // never drop it, since its offset must not be committed without it.
    delivery_errors_total->inc();
    std::fprintf(stderr, "sluice: kafka source '%s': delivery to %s failed (%s); producing it again\n", name.c_str(),
                 d->topic.c_str(), rd_kafka_err2str(message->err));
    MutexLock lock(pending_mu);
    pending.push_back({intake.clock().now() + kReproducePause, std::move(d->topic), std::move(d->key), std::move(d->payload),
                       std::move(d->task)});
    return;
  }
  if (d->task->deliveries_pending.fetch_sub(1) == 1) acknowledged(d->task);
}

void KafkaSource::Impl::produce_pending(Nanos now) {
  std::deque<PendingProduce> due;
  {
    MutexLock lock(pending_mu);
    while (!pending.empty() && pending.front().due <= now) {
      due.push_back(std::move(pending.front()));
      pending.pop_front();
    }
  }
  for (auto& p : due) produce(p.topic, p.key, std::move(p.payload), p.task);
}

void KafkaSource::Impl::acknowledged(const JobTaskPtr& task) {
  switch (task->written) {
    case JobTask::Written::kResult:
      completed_total->inc();
      break;
    case JobTask::Written::kRetry:
      retried_total->inc();
      break;
    case JobTask::Written::kDeadLetter:
      dead_lettered_total->inc();
      break;
    case JobTask::Written::kNone:
      break;
  }
  offsets.ack(task->topic, task->partition, task->offset, task->epoch);
  job_seconds->observe(nanos_to_seconds(intake.clock().now() - task->taken_at));
  const std::size_t left = in_flight.fetch_sub(1) - 1;
  // The loop sleeps in its poll while paused for max_in_flight: wake it at the resume mark.
  if (left == resume_in_flight() && waiting_for_acks.load() && consumer_queue) rd_kafka_queue_yield(consumer_queue.get());
}

}  // namespace sluice::kafka
