// JobQueue: where the HTTP source hands a request that is to run later as a job, and where it
// looks jobs up (docs/kafka.md, HTTP to Kafka). The HTTP layer knows only this interface; the
// Kafka implementation (connectors/kafka/kafka_job_queue.h) is wired in by the app, so this
// library never links librdkafka.
//
// Contract:
//  - enqueue() takes one job record (an OpenAI Batch input line) under its job id and calls
//    `done` exactly once, from any thread: ok when the broker has acknowledged the record (the
//    job can no longer be lost with this process), else why not (kUnavailable: the queue is
//    full, stopping or the broker did not acknowledge in time; the client may retry). From
//    enqueue() on, lookup(id) answers kQueued until a result arrives.
//  - lookup() answers what the queue knows of a job id: queued (written by this process, no
//    result yet), finished (a result line seen on the results topic, from any process), or
//    nothing (never seen, or forgotten: the table is bounded). With the job's tenant: the one
//    it was queued under, as its result line carries it (x_sluice.tenant); the HTTP source
//    answers a job only to a key of that tenant (others get the 404 of an unknown id).
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "graph/status.h"

namespace sluice::http {

struct JobRecord {
  std::string id;    // the job id (custom_id of the line), the record's key
  std::string line;  // the OpenAI Batch input line
  std::string tenant;  // whose job; empty: none (no API keys)
  std::string traceparent;  // the client's W3C trace context, also sent as the record's "traceparent" header
};

struct JobLookup {
  enum class State { kQueued, kFinished } state = State::kQueued;
  std::int64_t queued_unix_ms = 0;  // when this process accepted it (0: another process did)
  std::string result_line;          // kFinished: the results topic's OpenAI Batch output line
  std::string tenant;               // whose job; empty: none (a job written to Kafka without one)
};

class JobQueue {
 public:
  virtual ~JobQueue() = default;
  virtual void enqueue(JobRecord record, std::function<void(Status)> done) = 0;
  virtual std::optional<JobLookup> lookup(const std::string& id) const = 0;
};

}  // namespace sluice::http
