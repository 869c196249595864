#include "graph/external_ids.h"

#include <chrono>
#include <cstdio>
#include <random>

namespace sluice {

const std::string& process_id_part() {
  static const std::string part = [] {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count();
    std::random_device device;  // the OS's random source
    const std::uint32_t random = device();
    char buf[32];
    std::snprintf(buf, sizeof buf, "%011llx%08x", static_cast<unsigned long long>(ms) & 0xfffffffffffULL, random);
    return std::string(buf);
  }();
  return part;
}

std::string external_request_id(std::string_view kind, std::uint64_t n) {
  std::string id(kind);
  id += '-';
  id += process_id_part();
  id += '-';
  id += std::to_string(n);
  return id;
}

}  // namespace sluice
