// external_request_id: the id a client sees for a request (OpenAI's "chatcmpl-...", the
// X-Request-Id header, a Kafka result's request_id, a 500's reference), unique across restarts
// and processes, not only within one: clients, logs and job tables key on it.
//
// Form: <kind>-<process part>-<n>, where the process part is fixed at first use from the Unix
// time in milliseconds (11 hex digits, so ids of later processes sort after earlier ones) and 32
// random bits (two processes started in the same millisecond differ), and n is the pipeline's
// request number (RequestIntake::next_request_id), so ids within a process keep their order.
// E.g. chatcmpl-19aeb1c3f2a5f3c2a1b-41.
//
// Thread-safety: thread-safe (the process part is computed once).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace sluice {

std::string external_request_id(std::string_view kind, std::uint64_t n);
// The process part alone.
const std::string& process_id_part();

}  // namespace sluice
