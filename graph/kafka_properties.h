// The rule for a pipeline file's Kafka `properties` (a kafka source's and an HTTP source's
// async_jobs): one list of "name=value" librdkafka settings, checked here for both
// `sluice validate` (graph/spec_validator.cc, at file:line:column) and the Kafka clients
// (connectors/kafka/rdkafka_handles.cc), so a file validate accepts is one a worker starts with.
//
// Refused: an entry that is not name=value with a non-empty name, and the settings Sluice's
// guarantees rest on (docs/kafka.md, Guarantees): enable.auto.commit and
// enable.auto.offset.store (offsets are committed only after a job's outcome is acknowledged),
// enable.idempotence and acks (the producer is idempotent with acks=all), bootstrap.servers and
// group.id (the `bootstrap` and `group` fields say them). Values librdkafka itself refuses
// (an unknown name, a bad number) are only found when the client is made: librdkafka is not a
// dependency of graph/.
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>

namespace sluice {

// What is wrong with one `properties` entry, as a sentence without the field's path; nullopt
// when it is allowed.
std::optional<std::string> kafka_property_problem(const std::string& entry);

}  // namespace sluice
