#include "graph/system_fingerprint.h"

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <set>

#include "graph/fnv1a.h"
#include "graph/mutex.h"

namespace sluice {
namespace {

Mutex mu;
std::set<std::string> models GUARDED_BY(mu);  // sorted: the fingerprint does not depend on load order

}  // namespace

void note_model_file(const std::string& path) {
  std::error_code ec;
  std::string identity = path;
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec) identity += "|" + std::to_string(size);
  const auto mtime = std::filesystem::last_write_time(path, ec);
  if (!ec) identity += "|" + std::to_string(mtime.time_since_epoch().count());
  MutexLock lock(mu);
  models.insert(identity);
}

std::string system_fingerprint() {
  std::uint64_t h = fnv1a64("sluice " SLUICE_VERSION " " __DATE__ " " __TIME__);
  {
    MutexLock lock(mu);
    for (const std::string& m : models) h = fnv1a64("\n", fnv1a64(m, h));
  }
  char out[24];
  std::snprintf(out, sizeof out, "fp_%016llx", static_cast<unsigned long long>(h));
  return out;
}

}  // namespace sluice
