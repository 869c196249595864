// RAII over librdkafka's C handles, and the one place a configuration is built.
//
// librdkafka 2.0 (Debian 12) through its C API: the C++ binding adds a class per concept and
// exceptions we would only catch again. Every handle here is destroyed by its owner; a
// configuration is consumed by rd_kafka_new only on success, which make_handle respects.
//
// Thread-safety: librdkafka's own (handles are thread-safe; a topic-partition list is not).
#pragma once

#include <librdkafka/rdkafka.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph/status.h"

namespace sluice::kafka {

struct KafkaDeleter {
  void operator()(rd_kafka_t* h) const { rd_kafka_destroy(h); }
  void operator()(rd_kafka_conf_t* c) const { rd_kafka_conf_destroy(c); }
  void operator()(rd_kafka_topic_partition_list_t* l) const { rd_kafka_topic_partition_list_destroy(l); }
  void operator()(rd_kafka_queue_t* q) const { rd_kafka_queue_destroy(q); }
};
using KafkaHandle = std::unique_ptr<rd_kafka_t, KafkaDeleter>;
using KafkaConf = std::unique_ptr<rd_kafka_conf_t, KafkaDeleter>;
using PartitionList = std::unique_ptr<rd_kafka_topic_partition_list_t, KafkaDeleter>;
using QueueHandle = std::unique_ptr<rd_kafka_queue_t, KafkaDeleter>;  // released before its handle

using Property = std::pair<std::string, std::string>;

// A configuration with `properties` set in order (a later one wins). The error names the
// property and quotes librdkafka's reason, e.g. "kafka property 'sasl.mechanism=PLAN': ...".
Status make_conf(const std::vector<Property>& properties, KafkaConf* out);

// rd_kafka_new for `type`; takes the configuration only on success.
Status make_handle(rd_kafka_type_t type, KafkaConf conf, KafkaHandle* out);

// "name=value" strings (a pipeline file's `properties`) as pairs, by graph/kafka_properties.h's
// rule (the one `sluice validate` applies); the error names the entry.
Status parse_properties(const std::vector<std::string>& entries, std::vector<Property>* out);

// A client's settings: bootstrap.servers and client.id, then the file's `entries` (name=value)
// on top (parse_properties: those Sluice's guarantees rest on are refused). The error names the
// entry; the caller prefixes the field.
Status client_properties(const std::string& bootstrap, const std::string& client_id,
                         const std::vector<std::string>& entries, std::vector<Property>* out);

// `base` and what an idempotent producer needs, last so nothing overrides them: its own retries
// neither duplicate nor reorder, and every in-sync replica acknowledges (acks=all). The
// consumer-only settings a pipeline file passes for the source's consumer (session.timeout.ms,
// fetch.*, ...) are left out: librdkafka would warn at every start that the producer ignores them.
std::vector<Property> producer_properties(std::vector<Property> base);

// A copy of `list` (librdkafka lists are owned by their creator).
PartitionList copy_list(const rd_kafka_topic_partition_list_t* list);

}  // namespace sluice::kafka
