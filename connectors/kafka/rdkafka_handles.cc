#include "connectors/kafka/rdkafka_handles.h"

#include "graph/kafka_properties.h"

#include <algorithm>

namespace sluice::kafka {

Status make_conf(const std::vector<Property>& properties, KafkaConf* out) {
  KafkaConf conf(rd_kafka_conf_new());
  char error[512];
  for (const auto& [name, value] : properties) {
    if (rd_kafka_conf_set(conf.get(), name.c_str(), value.c_str(), error, sizeof error) != RD_KAFKA_CONF_OK) {
      return Status::Error(StatusCode::kInvalidArgument, "kafka property '" + name + "=" + value + "': " + error);
    }
  }
  *out = std::move(conf);
  return Status::Ok();
}


Status make_handle(rd_kafka_type_t type, KafkaConf conf, KafkaHandle* out) {
  char error[512];
  rd_kafka_t* handle = rd_kafka_new(type, conf.get(), error, sizeof error);
  if (!handle) {
    return Status::Error(StatusCode::kInvalidArgument,
                         std::string("cannot create the kafka ") + (type == RD_KAFKA_CONSUMER ? "consumer" : "producer") +
                             ": " + error);
  }
  conf.release();  // rd_kafka_new owns it now
  out->reset(handle);
  return Status::Ok();
}

Status parse_properties(const std::vector<std::string>& entries, std::vector<Property>* out) {
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const std::string& e = entries[i];
    if (auto problem = kafka_property_problem(e)) {
      return Status::Error(StatusCode::kInvalidArgument, "properties[" + std::to_string(i) + "]: " + *problem);
    }
    const auto eq = e.find('=');
    out->emplace_back(e.substr(0, eq), e.substr(eq + 1));
  }
  return Status::Ok();
}

Status client_properties(const std::string& bootstrap, const std::string& client_id,
                         const std::vector<std::string>& entries, std::vector<Property>* out) {
  std::vector<Property> user;
  if (Status s = parse_properties(entries, &user); !s.ok()) return s;
  *out = {{"bootstrap.servers", bootstrap}, {"client.id", client_id}};
  out->insert(out->end(), user.begin(), user.end());
  return Status::Ok();
}

namespace {
// librdkafka's consumer-scoped properties (CONFIGURATION.md, scope C) that a user sets.
bool consumer_only(const std::string& k) {
  static constexpr const char* kNames[] = {
      "session.timeout.ms", "heartbeat.interval.ms", "max.poll.interval.ms", "group.instance.id",
      "group.protocol.type", "partition.assignment.strategy", "coordinator.query.interval.ms",
      "auto.commit.interval.ms", "auto.offset.reset", "queued.min.messages", "queued.max.messages.kbytes",
      "fetch.wait.max.ms", "fetch.message.max.bytes", "max.partition.fetch.bytes", "fetch.max.bytes",
      "fetch.min.bytes", "fetch.error.backoff.ms", "fetch.queue.backoff.ms", "isolation.level", "check.crcs",
      "enable.partition.eof", "offset.store.method", "consume.callback.max.messages"};
  for (const char* n : kNames) {
    if (k == n) return true;
  }
  return false;
}
}  // namespace

std::vector<Property> producer_properties(std::vector<Property> base) {
  base.erase(std::remove_if(base.begin(), base.end(), [](const Property& p) { return consumer_only(p.first); }), base.end());
  // A default the file may override (it comes first; librdkafka keeps the last value set),
  // then the settings the guarantees rest on, which the validator refuses in a file.
  std::vector<Property> out = {{"linger.ms", "5"}};
  out.insert(out.end(), base.begin(), base.end());
  out.insert(out.end(), {{"enable.idempotence", "true"}, {"acks", "all"}});
  return out;
}

PartitionList copy_list(const rd_kafka_topic_partition_list_t* list) {
  return PartitionList(rd_kafka_topic_partition_list_copy(list));
}

}  // namespace sluice::kafka
