#include "nodes/cache/redis_tier.h"

#include <hiredis/hiredis.h>
#include <sys/socket.h>

#include <cstdio>
#include <random>
#include <stdexcept>

#include "nodes/cache/redis_scripts.h"

namespace sluice::cache {
namespace {

constexpr std::size_t kMaxPending = 64;

std::string random_hex() {
  std::random_device rd;
  const std::uint64_t v = (std::uint64_t{rd()} << 32) ^ rd();
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

RedisTier::RedisTier(Options options, Handlers handlers, MetricsRegistry* metrics, const Labels& labels)
    : options_(std::move(options)),
      handlers_(std::move(handlers)),
      instance_(random_hex()),
      commands_(options_.address, options_.timeout, "cache " + options_.prefix) {
  if (metrics) {
    up_ = &metrics->gauge("sluice_cache_redis_up", "Whether an answer cache's shared Redis tier is reachable (1) or it serves from L1 alone (0)", labels);
    errors_ = &metrics->counter("sluice_cache_redis_errors_total", "Redis calls of an answer cache that failed (unreachable, error reply, undecodable record)", labels);
    hits_ = &metrics->counter("sluice_cache_redis_hits_total", "Answer cache lookups that L1 missed and Redis answered", labels);
    mirrored_ = &metrics->counter("sluice_cache_redis_mirrored_total", "Semantic cache entries loaded from Redis (made by other instances, or reloaded after an outage)", labels);
  }
  subscriber_ = std::thread([this] { subscribe_loop(); });
}

RedisTier::~RedisTier() {
  {
    MutexLock lock(stop_mu_);
    stop_ = true;
    if (subscriber_fd_ >= 0) ::shutdown(subscriber_fd_, SHUT_RDWR);
  }
  stop_cv_.notify_all();
  subscriber_.join();
}

void RedisTier::error() {
  if (errors_) errors_->inc();
  if (up_) up_->set(commands_.up() ? 1 : 0);
}

std::string RedisTier::new_id() { return instance_ + "-" + std::to_string(next_id_.fetch_add(1)); }

std::optional<v1::CachedAnswerRecord> RedisTier::get(const std::string& id) {
  // Invalidations queued while Redis was unreachable go first, so this read never returns an
  // entry one of them deletes (the caller would put it back into its L1).
  retry_pending();
  RedisReply reply;
  const std::string key = entry_key(id);
  if (!commands_.command({"GET", key}, &reply).ok() || reply.kind == RedisReply::Kind::kError) {
    error();
    return std::nullopt;
  }
  if (up_) up_->set(1);
  return decode(key, reply);
}

std::optional<v1::CachedAnswerRecord> RedisTier::decode(const std::string& key, const RedisReply& value) {
  if (value.kind != RedisReply::Kind::kString) return std::nullopt;  // absent (expired, deleted)
  v1::CachedAnswerRecord record;
  if (!record.ParseFromString(value.string) || record.version() != kCachedAnswerRecordVersion) {
    std::fprintf(stderr, "sluice: cache %s: Redis value %s is not a version-%u CachedAnswerRecord; read as a miss\n",
                 options_.prefix.c_str(), key.c_str(), kCachedAnswerRecordVersion);
    error();
    return std::nullopt;
  }
  return record;
}

std::string RedisTier::entry_key(std::string_view id) const {
  std::string key = options_.prefix + "e:";
  key += id;
  return key;
}

std::string RedisTier::index_list_key(std::string_view id) const {
  std::string key = options_.prefix + "m:";
  key += id;
  return key;
}

std::string RedisTier::index_key(std::string_view kind, std::string_view name) const {
  std::string key = options_.prefix + "i:";
  key += kind;
  if (!name.empty()) {
    key += ':';
    key += name;
  }
  return key;
}

void RedisTier::put(const std::string& id, const v1::CachedAnswerRecord& record) {
  const std::string key = entry_key(id);
  const std::string value = record.SerializeAsString();
  const std::string ttl_ms = std::to_string(options_.ttl > 0 ? std::max<Nanos>(1, options_.ttl / 1'000'000) : 0);
  std::vector<std::string> keys{key, index_key("all"), index_key("t", record.tenant())};
  for (const auto& c : record.cited()) keys.push_back(index_key("c", c));
  const std::string key_count = std::to_string(keys.size());
  const std::string index_list = index_list_key(id);
  std::vector<std::string_view> args{"EVAL", kPutScript, key_count};
  for (const auto& k : keys) args.push_back(k);
  args.push_back(value);
  args.push_back(ttl_ms);
  args.push_back(index_list);
  RedisReply reply;
  if (!commands_.command(args, &reply).ok() || reply.kind == RedisReply::Kind::kError) {
    // A refusal (scripting turned off, a key of another type) repeats on every put: said once.
    if (reply.kind == RedisReply::Kind::kError && !put_refused_.exchange(true)) {
      std::fprintf(stderr, "sluice: cache %s: Redis refused a put, so entries stay in this instance: %s\n",
                   options_.prefix.c_str(), reply.string.c_str());
    }
    error();
    return;
  }
  if (options_.mirror) {
    const std::string event = encode_cache_event({instance_, CacheEvent::Op::kAdd, id, {}});
    if (!commands_.command({"PUBLISH", options_.prefix + "events", event}, &reply).ok() ||
        reply.kind == RedisReply::Kind::kError) {
      error();
      return;
    }
  }
  if (up_) up_->set(1);
  retry_pending();
}

bool RedisTier::delete_indexed(const std::string& index) {
  // ZSCAN pages (an index of every entry can be large), each page deleted by one script that
  // takes every entry out of all its indexes: never the index as a whole, so an entry a put
  // indexes while the scan runs stays indexed and within a later invalidation's reach.
  const std::string entry_prefix = entry_key("");
  RedisReply reply;
  std::string cursor = "0";
  do {
    RedisReply page;
    if (!commands_.command({"ZSCAN", index, cursor, "COUNT", "512"}, &page).ok() ||
        page.kind != RedisReply::Kind::kArray || page.elements.size() != 2) {
      return false;
    }
    cursor = page.elements[0].string;
    const auto& pairs = page.elements[1].elements;  // member, score, member, score, ...
    // Only names of this tier's entries are deleted; anything else an index holds (Redis is
    // shared input: cache_wire.h) is only taken out of it.
    std::vector<std::string_view> entries, strays{"ZREM", index};
    std::vector<std::string> lists;
    for (std::size_t i = 0; i < pairs.size(); i += 2) {
      const std::string& member = pairs[i].string;
      if (member.size() > entry_prefix.size() && member.compare(0, entry_prefix.size(), entry_prefix) == 0) {
        entries.push_back(member);
        lists.push_back(index_list_key(std::string_view(member).substr(entry_prefix.size())));
      } else {
        strays.push_back(member);
      }
    }
    if (strays.size() > 2 && (!commands_.command(strays, &reply).ok() || reply.kind == RedisReply::Kind::kError)) return false;
    if (entries.empty()) continue;
    std::vector<std::string_view> args{"EVAL", kDeleteScript, "1", index};
    args.insert(args.end(), entries.begin(), entries.end());
    for (const auto& l : lists) args.push_back(l);
    if (!commands_.command(args, &reply).ok() || reply.kind == RedisReply::Kind::kError) return false;
  } while (cursor != "0");
  return true;
}

bool RedisTier::apply(const SharedInvalidation& what) {
  if (what.all) return delete_indexed(index_key("all"));
  if (what.tenant && !delete_indexed(index_key("t", *what.tenant))) return false;
  for (const auto& c : what.chunks) {
    if (!delete_indexed(index_key("c", c))) return false;
  }
  return true;
}

void RedisTier::invalidate(const SharedInvalidation& what) {
  const std::string message = encode_cache_event({instance_, CacheEvent::Op::kInvalidate, "", what});
  RedisReply reply;
  if (apply(what) && commands_.command({"PUBLISH", options_.prefix + "events", message}, &reply).ok()) {
    retry_pending();
    return;
  }
  error();
  MutexLock lock(pending_mu_);
  if (pending_.size() < kMaxPending) {
    pending_.push_back(what);
  } else {
    pending_.assign(1, SharedInvalidation{true, std::nullopt, {}});
  }
  has_pending_.store(true, std::memory_order_release);
}

void RedisTier::retry_pending() {
  if (!has_pending_.load(std::memory_order_acquire)) return;
  std::vector<SharedInvalidation> pending;
  {
    MutexLock lock(pending_mu_);
    pending.swap(pending_);
    has_pending_.store(false, std::memory_order_release);
  }
  for (const auto& p : pending) invalidate(p);  // one that fails again is queued again
}

void RedisTier::load_all() {
  // A page of SCAN, then its values in one MGET: one round trip per 500 entries, not per entry
  // (100,000 entries, one GET each, kept a new instance's subscriber busy for seconds on
  // loopback, minutes across a network).
  std::string cursor = "0";
  const std::string pattern = entry_key("*");
  do {
    RedisReply page;
    if (!commands_.command({"SCAN", cursor, "MATCH", pattern, "COUNT", "500"}, &page).ok() ||
        page.kind != RedisReply::Kind::kArray || page.elements.size() != 2) {
      error();
      return;
    }
    cursor = page.elements[0].string;
    const auto& keys = page.elements[1].elements;
    if (keys.empty()) continue;
    std::vector<std::string_view> mget{"MGET"};
    for (const auto& key : keys) mget.push_back(key.string);
    const std::uint64_t fill = handlers_.begin_fill ? handlers_.begin_fill() : 0;  // before the read
    RedisReply values;
    if (!commands_.command(mget, &values).ok() || values.kind != RedisReply::Kind::kArray ||
        values.elements.size() != keys.size()) {
      error();
      return;
    }
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (auto record = decode(keys[i].string, values.elements[i])) {
        handlers_.added(*record, fill);
        if (mirrored_) mirrored_->inc();
      }
    }
  } while (cursor != "0");
}

void RedisTier::on_connected(bool after_outage) {
  retry_pending();
  if (after_outage) handlers_.invalidated(SharedInvalidation{true, std::nullopt, {}});
  if (options_.mirror) load_all();
  RedisReply pong;
  const bool up = commands_.command({"PING"}, &pong).ok();
  if (up_) up_->set(up ? 1 : 0);
}

void RedisTier::subscribe_loop() {
  bool connected_before = false;
  while (true) {
    std::string cause;
    redisContext* c = RedisConnection::open(options_.address, options_.timeout, &cause);
    if (c) {
      redisSetTimeout(c, timeval{0, 0});  // block: the destructor wakes it by shutting the socket
      const std::string channel = options_.prefix + "events";
      auto* r = static_cast<redisReply*>(redisCommand(c, "SUBSCRIBE %b", channel.data(), channel.size()));
      if (r) freeReplyObject(r);
      bool stopping = false;
      {
        MutexLock lock(stop_mu_);
        stopping = stop_;
        if (!stopping && r) subscriber_fd_ = c->fd;
      }
      if (!stopping && r) {
        on_connected(connected_before);
        connected_before = true;
        subscribed_.store(true, std::memory_order_release);
        void* raw = nullptr;
        while (redisGetReply(c, &raw) == REDIS_OK) {
          const RedisReply m = RedisConnection::copy(static_cast<redisReply*>(raw));
          freeReplyObject(raw);
          if (m.kind != RedisReply::Kind::kArray || m.elements.size() != 3 || m.elements[0].string != "message") continue;
          const auto event = decode_cache_event(m.elements[2].string);
          if (!event || event->from == instance_) continue;
          if (event->op == CacheEvent::Op::kAdd && options_.mirror) {
            const std::uint64_t fill = handlers_.begin_fill ? handlers_.begin_fill() : 0;
            if (auto record = get(event->id)) {
              handlers_.added(*record, fill);
              if (mirrored_) mirrored_->inc();
            }
          } else if (event->op == CacheEvent::Op::kInvalidate) {
            handlers_.invalidated(event->invalidation);
          }
        }
      }
      subscribed_.store(false, std::memory_order_release);
      {
        MutexLock lock(stop_mu_);
        subscriber_fd_ = -1;
      }
      redisFree(c);
    }
    MutexLock lock(stop_mu_);
    if (stop_) return;
    if (errors_) errors_->inc();
    if (up_) up_->set(0);
    stop_cv_.wait_for(lock, RedisConnection::kRetryInterval, [this]() REQUIRES(stop_mu_) { return stop_; });
    if (stop_) return;
  }
}

std::shared_ptr<RedisTier> node_redis_tier(const NodeContext& ctx, const std::string& tier, const std::string& url,
                                           Nanos timeout, Nanos ttl, bool mirror, RedisTier::Handlers handlers) {
  RedisTier::Options o;
  if (Status s = parse_redis_url(url, &o.address); !s.ok()) throw std::invalid_argument(s.message);
  o.timeout = std::chrono::milliseconds(std::max<Nanos>(1, timeout / 1'000'000));
  o.prefix = "sluice:cache:" + ctx.pipeline_name + ":" + ctx.name + ":";
  o.ttl = ttl;
  o.mirror = mirror;
  const Labels labels{{"pipeline", ctx.pipeline_name}, {"node", ctx.name}, {"tier", tier}};
  return std::make_shared<RedisTier>(std::move(o), std::move(handlers), ctx.metrics, labels);
}

}  // namespace sluice::cache
