#include "connectors/http/connections_per_ip.h"

#include <netinet/in.h>

namespace sluice::http {

std::string ConnectionsPerIp::key_of(const sockaddr_storage& addr) {
  if (addr.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(addr);
    return std::string(reinterpret_cast<const char*>(&v4.sin_addr), sizeof v4.sin_addr);
  }
  if (addr.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(addr);
    const auto* bytes = reinterpret_cast<const char*>(&v6.sin6_addr);
    if (IN6_IS_ADDR_V4MAPPED(&v6.sin6_addr)) return std::string(bytes + 12, 4);  // the same client as its IPv4 address
    return std::string(bytes, sizeof v6.sin6_addr);
  }
  return {};
}

bool ConnectionsPerIp::try_add(const std::string& peer) {
  if (!enabled() || peer.empty()) return true;
  MutexLock lock(mu_);
  std::uint32_t& n = counts_[peer];
  if (n >= limit_) return false;  // n > 0 here, so the entry was there before: nothing to erase
  ++n;
  return true;
}

void ConnectionsPerIp::remove(const std::string& peer) {
  if (!enabled() || peer.empty()) return;
  MutexLock lock(mu_);
  auto it = counts_.find(peer);
  if (it == counts_.end()) return;
  if (--it->second == 0) counts_.erase(it);
}

std::size_t ConnectionsPerIp::peers() const {
  MutexLock lock(mu_);
  return counts_.size();
}

}  // namespace sluice::http
