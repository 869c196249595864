#include "nodes/cache/redis_tier.h"

#include <hiredis/hiredis.h>
#include <sys/socket.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>
#include <stdexcept>

namespace sluice::cache {
namespace {

constexpr std::size_t kMaxPending = 64;
constexpr std::uint32_t kRecordVersion = 1;

std::int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string random_hex() {
  std::random_device rd;
  const std::uint64_t v = (std::uint64_t{rd()} << 32) ^ rd();
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

v1::CachedAnswerRecord answer_record(const CachedAnswer& answer, const Clock& clock) {
  v1::CachedAnswerRecord r;
  r.set_version(kRecordVersion);
  for (const auto& p : answer.parts) {
    auto* part = r.add_parts();
    part->set_event(p.event);
    part->set_type(p.type);
    part->set_text(p.text);
  }
  r.set_prompt_tokens(answer.usage.prompt_tokens);
  r.set_completion_tokens(answer.usage.completion_tokens);
  r.set_finish_reason(answer.finish_reason);
  r.set_kb_version(answer.kb_version);
  for (const auto& c : answer.cited) r.add_cited(c);
  r.set_seconds(answer.seconds);
  const Nanos age = clock.now() - answer.created;
  r.set_created_unix_ms(unix_ms() - age / 1'000'000);
  return r;
}

std::shared_ptr<const CachedAnswer> answer_from_record(const v1::CachedAnswerRecord& r, const Clock& clock) {
  if (r.version() != kRecordVersion) return nullptr;
  auto a = std::make_shared<CachedAnswer>();
  for (const auto& p : r.parts()) a->parts.push_back({p.event(), p.type(), p.text()});
  a->usage.prompt_tokens = r.prompt_tokens();
  a->usage.completion_tokens = r.completion_tokens();
  a->finish_reason = r.finish_reason();
  a->kb_version = r.kb_version();
  a->cited.assign(r.cited().begin(), r.cited().end());
  a->seconds = r.seconds();
  const std::int64_t age_ms = std::max<std::int64_t>(0, unix_ms() - r.created_unix_ms());
  a->created = clock.now() - age_ms * 1'000'000;
  return a;
}

RedisTier::RedisTier(Options options, Handlers handlers, const Clock& clock, MetricsRegistry* metrics, const Labels& labels)
    : options_(std::move(options)),
      handlers_(std::move(handlers)),
      clock_(clock),
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
  RedisReply reply;
  const std::string key = options_.prefix + "e:" + id;
  if (!commands_.command({"GET", key}, &reply).ok() || reply.kind == RedisReply::Kind::kError) {
    error();
    return std::nullopt;
  }
  if (up_) up_->set(1);
  if (reply.kind != RedisReply::Kind::kString) return std::nullopt;
  v1::CachedAnswerRecord record;
  if (!record.ParseFromString(reply.string) || record.version() != kRecordVersion) {
    std::fprintf(stderr, "sluice: cache %s: Redis value %s is not a version-%u CachedAnswerRecord; read as a miss\n",
                 options_.prefix.c_str(), key.c_str(), kRecordVersion);
    error();
    return std::nullopt;
  }
  return record;
}

void RedisTier::put(const std::string& id, const v1::CachedAnswerRecord& record) {
  const std::string key = options_.prefix + "e:" + id;
  const std::string value = record.SerializeAsString();
  const std::string ttl_ms = std::to_string(std::max<Nanos>(1, options_.ttl / 1'000'000));
  RedisReply reply;
  auto run = [&](const std::vector<std::string_view>& args) {
    const bool ok = commands_.command(args, &reply).ok() && reply.kind != RedisReply::Kind::kError;
    if (!ok) error();
    return ok;
  };
  const bool set = options_.ttl > 0 ? run({"SET", key, value, "PX", ttl_ms}) : run({"SET", key, value});
  if (!set) return;
  std::vector<std::string> sets{options_.prefix + "all", options_.prefix + "t:" + record.tenant()};
  for (const auto& c : record.cited()) sets.push_back(options_.prefix + "c:" + c);
  for (const auto& s : sets) {
    if (!run({"SADD", s, key})) return;
    if (options_.ttl > 0 && !run({"PEXPIRE", s, ttl_ms})) return;  // an index outlives its newest entry by nothing
  }
  if (options_.mirror) {
    const std::string message = nlohmann::json{{"from", instance_}, {"op", "add"}, {"id", id}}.dump();
    run({"PUBLISH", options_.prefix + "events", message});
  }
  if (up_) up_->set(1);
}

bool RedisTier::delete_set_members(const std::string& set) {
  RedisReply members;
  if (!commands_.command({"SMEMBERS", set}, &members).ok() || members.kind != RedisReply::Kind::kArray) return false;
  RedisReply reply;
  std::vector<std::string_view> del{"DEL"};
  for (const auto& m : members.elements) {
    del.push_back(m.string);
    if (del.size() == 512) {
      if (!commands_.command(del, &reply).ok()) return false;
      del.resize(1);
    }
  }
  del.push_back(set);
  return commands_.command(del, &reply).ok();
}

bool RedisTier::apply(const SharedInvalidation& what) {
  if (what.all) return delete_set_members(options_.prefix + "all");
  if (what.tenant && !delete_set_members(options_.prefix + "t:" + *what.tenant)) return false;
  for (const auto& c : what.chunks) {
    if (!delete_set_members(options_.prefix + "c:" + c)) return false;
  }
  return true;
}

void RedisTier::invalidate(const SharedInvalidation& what) {
  nlohmann::json message{{"from", instance_}, {"op", "invalidate"}, {"all", what.all}, {"chunks", what.chunks}};
  if (what.tenant) message["tenant"] = *what.tenant;
  RedisReply reply;
  if (apply(what) && commands_.command({"PUBLISH", options_.prefix + "events", message.dump()}, &reply).ok()) return;
  error();
  MutexLock lock(pending_mu_);
  if (pending_.size() < kMaxPending) {
    pending_.push_back(what);
  } else {
    pending_.assign(1, SharedInvalidation{true, std::nullopt, {}});
  }
}

void RedisTier::load_all() {
  std::string cursor = "0";
  const std::string pattern = options_.prefix + "e:*";
  do {
    RedisReply page;
    if (!commands_.command({"SCAN", cursor, "MATCH", pattern, "COUNT", "500"}, &page).ok() ||
        page.kind != RedisReply::Kind::kArray || page.elements.size() != 2) {
      error();
      return;
    }
    cursor = page.elements[0].string;
    for (const auto& key : page.elements[1].elements) {
      const std::string id = key.string.substr(options_.prefix.size() + 2);
      if (auto record = get(id)) {
        handlers_.added(*record);
        if (mirrored_) mirrored_->inc();
      }
    }
  } while (cursor != "0");
}

void RedisTier::on_connected(bool after_outage) {
  std::vector<SharedInvalidation> pending;
  {
    MutexLock lock(pending_mu_);
    pending.swap(pending_);
  }
  for (const auto& p : pending) invalidate(p);
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
        void* raw = nullptr;
        while (redisGetReply(c, &raw) == REDIS_OK) {
          const RedisReply m = RedisConnection::copy(static_cast<redisReply*>(raw));
          freeReplyObject(raw);
          if (m.kind != RedisReply::Kind::kArray || m.elements.size() != 3 || m.elements[0].string != "message") continue;
          const auto event = nlohmann::json::parse(m.elements[2].string, nullptr, false);
          if (!event.is_object() || event.value("from", "") == instance_) continue;
          const std::string op = event.value("op", "");
          if (op == "add" && options_.mirror) {
            if (auto record = get(event.value("id", ""))) {
              handlers_.added(*record);
              if (mirrored_) mirrored_->inc();
            }
          } else if (op == "invalidate") {
            SharedInvalidation what;
            what.all = event.value("all", false);
            if (event.contains("tenant") && event["tenant"].is_string()) what.tenant = event["tenant"].get<std::string>();
            if (event.contains("chunks") && event["chunks"].is_array()) {
              for (const auto& ch : event["chunks"]) {
                if (ch.is_string()) what.chunks.push_back(ch.get<std::string>());
              }
            }
            handlers_.invalidated(what);
          }
        }
      }
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
  return std::make_shared<RedisTier>(std::move(o), std::move(handlers), *ctx.clock, ctx.metrics, labels);
}

}  // namespace sluice::cache
