// ConnectionsPerIp: how many connections each peer address holds, for max_connections_per_ip.
//
// All event loops of a server share one (a connection is accepted and closed on whichever loop
// took it), so it is guarded by a mutex; it is touched once when a connection is accepted and
// once when it closes, never per byte. Only addresses with an open connection have an entry
// (an entry goes when its count reaches 0), so the map is bounded by the open connections.
//
// The key is the whole address: IPv4, or IPv6 with IPv4-mapped addresses (::ffff:a.b.c.d)
// counted as their IPv4 address, so a dual-stack listener gives no client two quotas. IPv6
// addresses are not grouped by prefix: hosts of one /64 (an office LAN) are distinct clients.
//
// Thread-safety: all methods.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>

#include "graph/mutex.h"

namespace sluice::http {

class ConnectionsPerIp {
 public:
  // limit: connections one address may hold; 0 means unlimited (nothing is counted).
  explicit ConnectionsPerIp(std::uint32_t limit) : limit_(limit) {}

  bool enabled() const { return limit_ > 0; }
  std::uint32_t limit() const { return limit_; }

  // The key of a peer address (its raw bytes), or empty for a family that is not counted.
  static std::string key_of(const sockaddr_storage& addr);

  // Counts one more connection from `peer`, or returns false (counting nothing) when it
  // already holds `limit`. An empty key is never refused.
  bool try_add(const std::string& peer);
  // Uncounts one connection of `peer` (a key try_add accepted).
  void remove(const std::string& peer);
  // Addresses holding at least one connection.
  std::size_t peers() const;

 private:
  const std::uint32_t limit_;
  mutable Mutex mu_;
  std::unordered_map<std::string, std::uint32_t> counts_ GUARDED_BY(mu_);  // only counts > 0
};

}  // namespace sluice::http
