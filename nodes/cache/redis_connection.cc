#include "nodes/cache/redis_connection.h"

#include <hiredis/hiredis.h>
#include <sys/time.h>

#include <charconv>
#include <cstdio>

namespace sluice::cache {
namespace {

// The URL as an error may quote it: a password (before the last '@') is shown as "***", so
// the message can go to a log.
std::string redacted(std::string_view url) {
  const auto at = url.rfind('@');
  if (at == std::string_view::npos) return std::string(url);
  constexpr std::string_view kScheme = "redis://";
  const std::size_t from = url.substr(0, kScheme.size()) == kScheme ? kScheme.size() : 0;
  return std::string(url.substr(0, from)) + "***" + std::string(url.substr(at));
}

Status bad_url(std::string_view url, const std::string& problem) {
  return Status::Error(StatusCode::kInvalidArgument,
                       "redis_url '" + redacted(url) + "': " + problem + " (expected redis://[:password@]host[:port][/db])");
}

bool parse_int(std::string_view text, int* out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

timeval to_timeval(std::chrono::milliseconds t) {
  return timeval{static_cast<time_t>(t.count() / 1000), static_cast<suseconds_t>((t.count() % 1000) * 1000)};
}

}  // namespace

Status parse_redis_url(std::string_view url, RedisAddress* out) {
  constexpr std::string_view kScheme = "redis://";
  if (url.substr(0, kScheme.size()) != kScheme) return bad_url(url, "not a redis:// URL");
  std::string_view rest = url.substr(kScheme.size());
  RedisAddress a;
  if (const auto at = rest.rfind('@'); at != std::string_view::npos) {
    std::string_view auth = rest.substr(0, at);
    if (const auto colon = auth.find(':'); colon != std::string_view::npos) auth = auth.substr(colon + 1);
    a.password = std::string(auth);
    rest = rest.substr(at + 1);
  }
  if (const auto slash = rest.find('/'); slash != std::string_view::npos) {
    const std::string_view db = rest.substr(slash + 1);
    if (!db.empty() && (!parse_int(db, &a.db) || a.db < 0)) return bad_url(url, "database '" + std::string(db) + "' is not a number");
    rest = rest.substr(0, slash);
  }
  if (const auto colon = rest.rfind(':'); colon != std::string_view::npos) {
    const std::string_view port = rest.substr(colon + 1);
    if (!parse_int(port, &a.port) || a.port <= 0 || a.port > 65535) return bad_url(url, "port '" + std::string(port) + "' is not 1-65535");
    rest = rest.substr(0, colon);
  }
  if (rest.empty()) return bad_url(url, "no host");
  a.host = std::string(rest);
  *out = std::move(a);
  return Status::Ok();
}

RedisConnection::RedisConnection(RedisAddress address, std::chrono::milliseconds timeout, std::string log_name)
    : address_(std::move(address)), timeout_(timeout), log_name_(std::move(log_name)) {}

RedisConnection::~RedisConnection() {
  MutexLock lock(mu_);
  if (context_) redisFree(context_);
}

redisContext* RedisConnection::open(const RedisAddress& address, std::chrono::milliseconds timeout, std::string* error) {
  redisContext* c = redisConnectWithTimeout(address.host.c_str(), address.port, to_timeval(timeout));
  if (!c || c->err) {
    *error = c ? c->errstr : "cannot allocate a connection";
    if (c) redisFree(c);
    return nullptr;
  }
  redisSetTimeout(c, to_timeval(timeout));
  auto run = [&](const char* what, std::vector<std::string> args) {
    std::vector<const char*> argv;
    std::vector<size_t> lens;
    for (const auto& s : args) {
      argv.push_back(s.data());
      lens.push_back(s.size());
    }
    auto* r = static_cast<redisReply*>(redisCommandArgv(c, static_cast<int>(argv.size()), argv.data(), lens.data()));
    const bool ok = r && r->type != REDIS_REPLY_ERROR;
    if (!ok) *error = std::string(what) + ": " + (r ? std::string(r->str, r->len) : std::string(c->errstr));
    if (r) freeReplyObject(r);
    return ok;
  };
  if ((!address.password.empty() && !run("AUTH", {"AUTH", address.password})) ||
      (address.db != 0 && !run("SELECT", {"SELECT", std::to_string(address.db)}))) {
    redisFree(c);
    return nullptr;
  }
  return c;
}

RedisReply RedisConnection::copy(const redisReply* r) {
  RedisReply out;
  switch (r->type) {
    case REDIS_REPLY_INTEGER:
      out.kind = RedisReply::Kind::kInteger;
      out.integer = r->integer;
      break;
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
      out.kind = RedisReply::Kind::kString;
      out.string.assign(r->str, r->len);
      break;
    case REDIS_REPLY_ERROR:
      out.kind = RedisReply::Kind::kError;
      out.string.assign(r->str, r->len);
      break;
    case REDIS_REPLY_ARRAY:
      out.kind = RedisReply::Kind::kArray;
      for (size_t i = 0; i < r->elements; ++i) out.elements.push_back(copy(r->element[i]));
      break;
    default:
      break;
  }
  return out;
}

bool RedisConnection::connect_locked() {
  std::string error;
  context_ = open(address_, timeout_, &error);
  if (!context_) {
    fail_locked(error);
    return false;
  }
  return true;
}

void RedisConnection::fail_locked(const std::string& cause) {
  if (context_) {
    redisFree(context_);
    context_ = nullptr;
  }
  up_ = false;
  retry_after_ = std::chrono::steady_clock::now() + kRetryInterval;
  if (!warned_) {
    std::fprintf(stderr, "sluice: %s: Redis at %s:%d unreachable (%s); serving from the in-process tier until it is back\n",
                 log_name_.c_str(), address_.host.c_str(), address_.port, cause.c_str());
    warned_ = true;
  }
}

Status RedisConnection::command(const std::vector<std::string_view>& args, RedisReply* reply) {
  MutexLock lock(mu_);
  if (!context_) {
    if (std::chrono::steady_clock::now() < retry_after_) return Status::Error(StatusCode::kUnavailable, "Redis is down");
    if (!connect_locked()) return Status::Error(StatusCode::kUnavailable, "Redis is down");
  }
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  argv.reserve(args.size());
  lens.reserve(args.size());
  for (auto a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  auto* r = static_cast<redisReply*>(redisCommandArgv(context_, static_cast<int>(argv.size()), argv.data(), lens.data()));
  if (!r) {
    fail_locked(context_->errstr);
    return Status::Error(StatusCode::kUnavailable, "Redis is down");
  }
  *reply = copy(r);
  freeReplyObject(r);
  if (!up_) {
    if (warned_) {
      std::fprintf(stderr, "sluice: %s: Redis at %s:%d is back; the shared tier resumes\n", log_name_.c_str(),
                   address_.host.c_str(), address_.port);
    }
    warned_ = false;
    up_ = true;
  }
  return Status::Ok();
}

bool RedisConnection::up() const {
  MutexLock lock(mu_);
  return up_;
}

}  // namespace sluice::cache
