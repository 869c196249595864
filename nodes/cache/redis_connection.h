// RedisConnection: one synchronous connection to a Redis server (hiredis), for the answer
// caches' shared tier. Commands are binary-safe argument lists; every call is bounded by the
// connect/command timeout, so a slow or absent Redis costs a request at most that long.
//
// Outages: a failed call drops the connection; the next attempt waits `retry_interval` (1 s)
// after the failure, and until then calls fail at once without touching the network, so a
// down Redis costs requests nothing. The first failure of an outage is logged (one line with
// the cause), and so is the recovery.
//
// URL: redis://[:password@]host[:port][/db] (port 6379, db 0 by default).
//
// Thread-safety: every method from any thread (one mutex: commands run one at a time per
// connection).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graph/mutex.h"
#include "graph/status.h"

struct redisContext;
struct redisReply;

namespace sluice::cache {

struct RedisAddress {
  std::string host = "127.0.0.1";
  int port = 6379;
  int db = 0;
  std::string password;
};
// Parses a redis:// URL into `*out`; InvalidArgument naming the problem otherwise (the URL it
// quotes has its password replaced by ***).
Status parse_redis_url(std::string_view url, RedisAddress* out);

// A reply, copied out of hiredis: nil, an integer, a string (bulk or status), or an array.
struct RedisReply {
  enum class Kind { kNil, kInteger, kString, kArray, kError };
  Kind kind = Kind::kNil;
  long long integer = 0;
  std::string string;
  std::vector<RedisReply> elements;
};

class RedisConnection {
 public:
  RedisConnection(RedisAddress address, std::chrono::milliseconds timeout, std::string log_name);
  ~RedisConnection();
  RedisConnection(const RedisConnection&) = delete;
  RedisConnection& operator=(const RedisConnection&) = delete;

  // Runs one command. Unavailable while Redis is unreachable (or within retry_interval of the
  // last failure); an error reply is returned as a reply of kind kError.
  Status command(const std::vector<std::string_view>& args, RedisReply* reply) EXCLUDES(mu_);
  // Whether the last call reached Redis.
  bool up() const EXCLUDES(mu_);

  // For the subscriber: a blocking connection of its own (timeouts as above), or null with the
  // cause in `*error`.
  static redisContext* open(const RedisAddress& address, std::chrono::milliseconds timeout, std::string* error);
  static RedisReply copy(const redisReply* reply);

  static constexpr std::chrono::seconds kRetryInterval{1};

 private:
  bool connect_locked() REQUIRES(mu_);
  void fail_locked(const std::string& cause) REQUIRES(mu_);

  const RedisAddress address_;
  const std::chrono::milliseconds timeout_;
  const std::string log_name_;
  mutable Mutex mu_;
  redisContext* context_ GUARDED_BY(mu_) = nullptr;
  bool up_ GUARDED_BY(mu_) = false;
  bool warned_ GUARDED_BY(mu_) = false;  // the outage has been logged
  std::chrono::steady_clock::time_point retry_after_ GUARDED_BY(mu_){};
};

}  // namespace sluice::cache
