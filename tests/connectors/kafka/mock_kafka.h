// MockKafka: librdkafka's mock cluster (rdkafka_mock.h) on loopback TCP for tests, with a
// plain producer and an offset-range reader as the tests' own clients. The cluster speaks
// the real Kafka protocol on real sockets: the source under test connects to its bootstrap
// address as to any broker.
#pragma once

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <chrono>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace sluice::kafka::testing {

struct Record {
  std::string topic;
  std::int32_t partition = 0;
  std::int64_t offset = 0;
  std::string key, value;
  std::string traceparent;  // the record's "traceparent" header; empty: none
};

class MockKafka {
 public:
  explicit MockKafka(int brokers = 1) {
    char err[512];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "log_level", "2", err, sizeof err);
    handle_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    if (!handle_) throw std::runtime_error(err);
    cluster_ = rd_kafka_mock_cluster_new(handle_, brokers);
    if (!cluster_) throw std::runtime_error("rd_kafka_mock_cluster_new failed");
    bootstrap_ = rd_kafka_mock_cluster_bootstraps(cluster_);
    conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap_.c_str(), err, sizeof err);
    rd_kafka_conf_set(conf, "linger.ms", "1", err, sizeof err);
    rd_kafka_conf_set(conf, "log_level", "2", err, sizeof err);
    producer_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    if (!producer_) throw std::runtime_error(err);
  }
  ~MockKafka() {
    rd_kafka_flush(producer_, 5000);
    rd_kafka_destroy(producer_);
    rd_kafka_mock_cluster_destroy(cluster_);
    rd_kafka_destroy(handle_);
  }
  MockKafka(const MockKafka&) = delete;
  MockKafka& operator=(const MockKafka&) = delete;

  const std::string& bootstrap() const { return bootstrap_; }
  rd_kafka_mock_cluster_t* cluster() { return cluster_; }

  void create_topic(const std::string& topic, int partitions) {
    if (rd_kafka_mock_topic_create(cluster_, topic.c_str(), partitions, 1)) throw std::runtime_error("topic " + topic);
    partitions_[topic] = partitions;
  }
  // Jobs, results, retries and dead letters with the source's default names.
  void create_job_topics(int job_partitions = 3) {
    create_topic("sluice.jobs", job_partitions);
    create_topic("sluice.results", 1);
    create_topic("sluice.retry", 1);
    create_topic("sluice.dlq", 1);
  }

  // Produces and waits for the broker's acknowledgement. partition -1: by key (or spread).
  // `traceparent`: a record header of that name (W3C trace context over Kafka); empty: none.
  void produce(const std::string& topic, const std::string& key, const std::string& value, int partition = -1,
               const std::string& traceparent = "") {
    rd_kafka_headers_t* headers = rd_kafka_headers_new(1);
    if (!traceparent.empty()) rd_kafka_header_add(headers, "traceparent", -1, traceparent.data(), static_cast<ssize_t>(traceparent.size()));
    rd_kafka_resp_err_t err = rd_kafka_producev(
        producer_, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_PARTITION(partition < 0 ? RD_KAFKA_PARTITION_UA : partition),
        RD_KAFKA_V_KEY(key.empty() ? nullptr : const_cast<char*>(key.data()), key.size()),
        RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()), RD_KAFKA_V_HEADERS(headers),
        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
    if (err) rd_kafka_headers_destroy(headers);  // on success librdkafka owns them
    if (err) throw std::runtime_error(std::string("produce: ") + rd_kafka_err2str(err));
  }
  void flush() { rd_kafka_flush(producer_, 10000); }

  // Every record of `topic` from the beginning, reading until `count` are there or `timeout`
  // passes. A fresh reader each call (no group, no commits).
  std::vector<Record> read(const std::string& topic, std::size_t count, std::chrono::milliseconds timeout) {
    return read_until(topic, timeout, [count](const std::vector<Record>& r) { return r.size() >= count; });
  }
  // Every record of `topic` from the beginning, until done(records so far) or `timeout`.
  template <class Done>
  std::vector<Record> read_until(const std::string& topic, std::chrono::milliseconds timeout, Done done) {
    char err[512];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap_.c_str(), err, sizeof err);
    rd_kafka_conf_set(conf, "group.id", "test-reader", err, sizeof err);
    rd_kafka_conf_set(conf, "enable.auto.commit", "false", err, sizeof err);
    rd_kafka_conf_set(conf, "log_level", "2", err, sizeof err);
    rd_kafka_t* consumer = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    rd_kafka_poll_set_consumer(consumer);
    rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(1);
    const int n = partitions_.count(topic) ? partitions_[topic] : 1;
    for (int p = 0; p < n; ++p) rd_kafka_topic_partition_list_add(list, topic.c_str(), p)->offset = RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_assign(consumer, list);
    rd_kafka_topic_partition_list_destroy(list);
    std::vector<Record> out;
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (!done(out) && std::chrono::steady_clock::now() < until) {
      rd_kafka_message_t* m = rd_kafka_consumer_poll(consumer, 50);
      if (!m) continue;
      if (!m->err) {
        Record r;
        r.topic = topic;
        r.partition = m->partition;
        r.offset = m->offset;
        if (m->key) r.key.assign(static_cast<const char*>(m->key), m->key_len);
        if (m->payload) r.value.assign(static_cast<const char*>(m->payload), m->len);
        rd_kafka_headers_t* headers = nullptr;
        const void* v = nullptr;
        std::size_t n = 0;
        if (rd_kafka_message_headers(m, &headers) == RD_KAFKA_RESP_ERR_NO_ERROR &&
            rd_kafka_header_get_last(headers, "traceparent", &v, &n) == RD_KAFKA_RESP_ERR_NO_ERROR && v) {
          r.traceparent.assign(static_cast<const char*>(v), n);
        }
        out.push_back(std::move(r));
      }
      rd_kafka_message_destroy(m);
    }
    rd_kafka_consumer_close(consumer);
    rd_kafka_destroy(consumer);
    return out;
  }

  // The group's committed offset of topic/partition (-1001 when none).
  std::int64_t committed(const std::string& group, const std::string& topic, int partition) {
    char err[512];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap_.c_str(), err, sizeof err);
    rd_kafka_conf_set(conf, "group.id", group.c_str(), err, sizeof err);
    rd_kafka_conf_set(conf, "log_level", "2", err, sizeof err);
    rd_kafka_t* consumer = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(list, topic.c_str(), partition);
    rd_kafka_committed(consumer, list, 5000);
    const std::int64_t offset = list->elems[0].offset;
    rd_kafka_topic_partition_list_destroy(list);
    rd_kafka_destroy(consumer);
    return offset;
  }

 private:
  rd_kafka_t* handle_ = nullptr;
  rd_kafka_mock_cluster_t* cluster_ = nullptr;
  rd_kafka_t* producer_ = nullptr;
  std::string bootstrap_;
  std::map<std::string, int> partitions_;
};

// Waits up to `timeout` for `done()`.
template <class F>
bool eventually(F done, std::chrono::milliseconds timeout = std::chrono::milliseconds(20000)) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

}  // namespace sluice::kafka::testing
