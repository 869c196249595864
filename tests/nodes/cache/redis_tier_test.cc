// The shared Redis tier against a real redis-server: two RedisTier objects with one prefix are
// two instances of one pipeline behind a load balancer.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "graph/mutex.h"
#include "nodes/cache/redis_tier.h"
#include "nodes/cache/semantic_store.h"
#include "tests/nodes/cache/redis_server.h"

namespace sluice::cache {
namespace {

using testing::eventually;
using testing::RedisServer;

std::shared_ptr<CachedAnswer> answer(const std::string& text, std::vector<std::string> cited = {}) {
  auto a = std::make_shared<CachedAnswer>();
  a->parts = {{false, "", text}, {true, "sources", R"([{"n":1}])"}};
  a->usage = {12, 3};
  a->finish_reason = "stop";
  a->kb_version = 7;
  a->cited = std::move(cited);
  a->seconds = 1.5;
  return a;
}

// What an instance saw through its handlers.
struct Instance {
  Mutex mu;
  std::vector<v1::CachedAnswerRecord> added GUARDED_BY(mu);
  std::vector<SharedInvalidation> invalidated GUARDED_BY(mu);
  std::unique_ptr<RedisTier> tier;

  Instance(const RedisServer& server, bool mirror, Nanos ttl = 0) {
    RedisTier::Options o;
    EXPECT_TRUE(parse_redis_url(server.url(), &o.address).ok());
    o.timeout = std::chrono::milliseconds(200);
    o.prefix = "sluice:cache:test:node:";
    o.ttl = ttl;
    o.mirror = mirror;
    tier = std::make_unique<RedisTier>(
        o,
        RedisTier::Handlers{[this](const v1::CachedAnswerRecord& r, std::uint64_t) {
                              MutexLock lock(mu);
                              added.push_back(r);
                            },
                            [this](const SharedInvalidation& w) {
                              MutexLock lock(mu);
                              invalidated.push_back(w);
                            },
                            nullptr},
        nullptr, Labels{});
  }
  std::size_t added_count() {
    MutexLock lock(mu);
    return added.size();
  }
  std::size_t invalidated_count() {
    MutexLock lock(mu);
    return invalidated.size();
  }
  SharedInvalidation last_invalidation() {
    MutexLock lock(mu);
    return invalidated.back();
  }
};

// Whether the instance's command connection reaches Redis (a lookup makes it connect) and it is
// subscribed to the others' events (a message published before that is not delivered to it).
bool connected(Instance& instance) {
  return eventually([&] {
    instance.tier->get("probe");
    return instance.tier->up() && instance.tier->subscribed();
  });
}

v1::CachedAnswerRecord record(const std::string& key, const CachedAnswer& a, const Clock& clock, std::string tenant = "") {
  v1::CachedAnswerRecord r = answer_record(a, clock);
  r.set_key(key);
  r.set_tenant(std::move(tenant));
  return r;
}


// A connection of the test's own, to look at what the tiers left in Redis.
struct Admin {
  std::unique_ptr<RedisConnection> connection;
  explicit Admin(const RedisServer& server) {
    RedisAddress address;
    EXPECT_TRUE(parse_redis_url(server.url(), &address).ok());
    connection = std::make_unique<RedisConnection>(address, std::chrono::milliseconds(500), "test");
  }
  RedisReply run(const std::vector<std::string_view>& args) {
    RedisReply r;
    EXPECT_TRUE(connection->command(args, &r).ok());
    EXPECT_NE(r.kind, RedisReply::Kind::kError) << r.string;
    return r;
  }
  long long count(const std::string& index) { return run({"ZCARD", index}).integer; }
};

constexpr const char* kPrefix = "sluice:cache:test:node:";

TEST(RedisUrl, ParsesAndRefusesWithTheReason) {
  RedisAddress a;
  ASSERT_TRUE(parse_redis_url("redis://:secret@cache.internal:6380/2", &a).ok());
  EXPECT_EQ(a.host, "cache.internal");
  EXPECT_EQ(a.port, 6380);
  EXPECT_EQ(a.db, 2);
  EXPECT_EQ(a.password, "secret");
  ASSERT_TRUE(parse_redis_url("redis://localhost", &a).ok());
  EXPECT_EQ(a.port, 6379);
  EXPECT_NE(parse_redis_url("http://localhost", &a).message.find("not a redis:// URL"), std::string::npos);
  EXPECT_NE(parse_redis_url("redis://h:99999", &a).message.find("port '99999'"), std::string::npos);
  EXPECT_NE(parse_redis_url("redis://h/x", &a).message.find("database 'x'"), std::string::npos);
  // An error quotes the URL, never its password.
  const std::string m = parse_redis_url("redis://:hunter2@h:0", &a).message;
  EXPECT_EQ(m.find("hunter2"), std::string::npos) << m;
  EXPECT_NE(m.find("redis://***@h:0"), std::string::npos) << m;
}

TEST(RedisTier, RecordsRoundTripAnAnswer) {
  SteadyClock clock;
  auto a = answer("Forty-two.", {"doc#1"});
  a->created = clock.now();
  const auto back = answer_from_record(record("k", *a, clock), clock);
  ASSERT_NE(back, nullptr);
  ASSERT_EQ(back->parts.size(), 2u);
  EXPECT_EQ(back->parts[0].text, "Forty-two.");
  EXPECT_TRUE(back->parts[1].event);
  EXPECT_EQ(back->usage.prompt_tokens, 12);
  EXPECT_EQ(back->kb_version, 7u);
  EXPECT_EQ(back->cited, std::vector<std::string>{"doc#1"});
  EXPECT_LT(clock.now() - back->created, kNanosPerSecond);
  v1::CachedAnswerRecord other = record("k", *a, clock);
  other.set_version(2);
  EXPECT_EQ(answer_from_record(other, clock), nullptr) << "another version is refused";
}

TEST(RedisTier, TwoInstancesShareExactEntriesAndInvalidations) {
  SLUICE_REQUIRE_REDIS_SERVER();
  RedisServer server;
  ASSERT_TRUE(server.start());
  SteadyClock clock;
  Instance a(server, false), b(server, false);
  ASSERT_TRUE(connected(a));
  ASSERT_TRUE(connected(b));
  a.tier->put("id1", record("the whole key 1", *answer("one", {"doc#1"}), clock, "acme"));
  a.tier->put("id2", record("the whole key 2", *answer("two", {"doc#2"}), clock, "acme"));
  a.tier->put("id3", record("the whole key 3", *answer("three"), clock, "other"));
  auto got = b.tier->get("id1");
  ASSERT_TRUE(got.has_value()) << "B reads what A stored";
  EXPECT_EQ(got->key(), "the whole key 1");
  EXPECT_EQ(got->parts(0).text(), "one");

  // A knowledge-base update at A retires doc#1: gone from Redis, and B is told.
  a.tier->invalidate(SharedInvalidation{false, std::nullopt, {"doc#1"}});
  EXPECT_FALSE(b.tier->get("id1").has_value());
  EXPECT_TRUE(b.tier->get("id2").has_value()) << "an entry citing nothing that changed stays";
  ASSERT_TRUE(eventually([&] { return b.invalidated_count() == 1; }));
  EXPECT_EQ(b.last_invalidation().chunks, std::vector<std::string>{"doc#1"});
  EXPECT_EQ(a.invalidated_count(), 0u) << "an instance ignores its own messages";

  // DELETE /v1/cache for one tenant.
  b.tier->invalidate(SharedInvalidation{false, std::string("acme"), {}});
  EXPECT_FALSE(a.tier->get("id2").has_value());
  EXPECT_TRUE(a.tier->get("id3").has_value());
  ASSERT_TRUE(eventually([&] { return a.invalidated_count() == 1; }));
  EXPECT_EQ(a.last_invalidation().tenant, std::optional<std::string>("acme"));
}

// An invalidation that could not reach Redis (here Redis stalled by CLIENT PAUSE past the tier's
// timeout, while every subscription stays up) is applied by the next call that reaches it: the
// entry goes from Redis and the other instance hears of it, with no resubscription in between.
TEST(RedisTier, AnInvalidationQueuedWhileRedisStalledIsAppliedByTheNextCall) {
  SLUICE_REQUIRE_REDIS_SERVER();
  RedisServer server;
  ASSERT_TRUE(server.start());
  SteadyClock clock;
  Instance a(server, false), b(server, false);
  ASSERT_TRUE(connected(a));
  ASSERT_TRUE(connected(b));
  a.tier->put("id1", record("the whole key 1", *answer("one", {"doc#1"}), clock));
  ASSERT_TRUE(b.tier->get("id1").has_value());
  {
    RedisAddress address;
    ASSERT_TRUE(parse_redis_url(server.url(), &address).ok());
    RedisConnection admin(address, std::chrono::milliseconds(500), "test");
    RedisReply r;
    ASSERT_TRUE(admin.command({"CLIENT", "PAUSE", "1000", "ALL"}, &r).ok());
    ASSERT_NE(r.kind, RedisReply::Kind::kError) << r.string;
  }
  a.tier->invalidate(SharedInvalidation{false, std::nullopt, {"doc#1"}});  // times out: queued
  EXPECT_FALSE(a.tier->up());
  EXPECT_EQ(b.invalidated_count(), 0u);
  // The pause ends after 1 s and A's connection retries after its 1 s back-off: a lookup then
  // reaches Redis and applies what was queued, before it reads, so no lookup at A returns the
  // entry (it would go back into A's L1 after the invalidation removed it there).
  bool read_it = false;
  ASSERT_TRUE(eventually([&] {
    read_it = a.tier->get("id1").has_value() || read_it;
    return b.invalidated_count() == 1;
  }));
  EXPECT_FALSE(read_it) << "a lookup read the entry before the queued invalidation deleted it";
  EXPECT_EQ(b.last_invalidation().chunks, std::vector<std::string>{"doc#1"});
  EXPECT_FALSE(b.tier->get("id1").has_value()) << "the queued invalidation deleted the entry from Redis";
}

TEST(RedisTier, EntriesExpireWithTheTtl) {
  SLUICE_REQUIRE_REDIS_SERVER();
  RedisServer server;
  ASSERT_TRUE(server.start());
  SteadyClock clock;
  Instance a(server, false, kNanosPerSecond / 5);
  a.tier->put("id", record("k", *answer("x"), clock));
  EXPECT_TRUE(a.tier->get("id").has_value());
  EXPECT_TRUE(eventually([&] { return !a.tier->get("id").has_value(); }, std::chrono::milliseconds(3000)));
}

// Each index is a sorted set scored by its entries' expiry, pruned as puts come: under steady
// traffic it holds about the live entries (a plain set whose expiry every put pushed on grew by
// one member a put, for as long as the traffic lasted).
TEST(RedisTier, IndexesHoldOnlyTheLiveEntries) {
  SLUICE_REQUIRE_REDIS_SERVER();
  RedisServer server;
  ASSERT_TRUE(server.start());
  SteadyClock clock;
  Instance a(server, false, kNanosPerSecond);  // long enough for 20 puts on a slow, sanitized run
  ASSERT_TRUE(connected(a));
  for (int i = 0; i < 20; ++i) {
    a.tier->put("old" + std::to_string(i), record("old " + std::to_string(i), *answer("x", {"doc#1"}), clock, "acme"));
  }
  Admin admin(server);
  EXPECT_EQ(admin.count(std::string(kPrefix) + "i:all"), 20);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // past the ttl
  a.tier->put("new", record("new", *answer("y", {"doc#1"}), clock, "acme"));
  EXPECT_EQ(admin.count(std::string(kPrefix) + "i:all"), 1);
  EXPECT_EQ(admin.count(std::string(kPrefix) + "i:t:acme"), 1);
  EXPECT_EQ(admin.count(std::string(kPrefix) + "i:c:doc#1"), 1);
}

// An index member that is not one of this tier's entries (Redis is shared input) is only taken
// out of the index by an invalidation, never deleted as a key.
TEST(RedisTier, AStrayIndexMemberIsNeverDeletedAsAKey) {
  SLUICE_REQUIRE_REDIS_SERVER();
  RedisServer server;
  ASSERT_TRUE(server.start());
  SteadyClock clock;
  Instance a(server, false);
  ASSERT_TRUE(connected(a));
  a.tier->put("id1", record("key 1", *answer("one"), clock, "acme"));
  Admin admin(server);
  admin.run({"SET", "someone-elses-key", "keep me"});
  admin.run({"ZADD", std::string(kPrefix) + "i:all", "+inf", "someone-elses-key"});
  a.tier->invalidate(SharedInvalidation{true, std::nullopt, {}});
  EXPECT_EQ(admin.run({"GET", "someone-elses-key"}).string, "keep me");
  EXPECT_FALSE(a.tier->get("id1").has_value());
  EXPECT_EQ(admin.count(std::string(kPrefix) + "i:all"), 0);
}

// Puts at one instance and invalidations of the same tenant at another, at once: however they
// interleave, every entry left in Redis is still in its indexes, so the next invalidation
// removes it (an invalidation that dropped a whole index after its scan left entries put during
// the scan in Redis and in no index, out of every later invalidation's reach).
TEST(RedisTier, AnEntryPutDuringAnInvalidationStaysWithinReachOfTheNext) {
  SLUICE_REQUIRE_REDIS_SERVER();
  RedisServer server;
  ASSERT_TRUE(server.start());
  SteadyClock clock;
  Instance a(server, false), b(server, false);
  ASSERT_TRUE(connected(a));
  ASSERT_TRUE(connected(b));
  std::atomic<bool> stop{false};
  std::atomic<int> puts{0};
  std::thread putter([&] {
    for (int i = 0; !stop.load(); ++i) {
      a.tier->put("p" + std::to_string(i), record("key " + std::to_string(i), *answer("x"), clock, "acme"));
      puts.fetch_add(1);
    }
  });
  for (int i = 0; i < 200; ++i) b.tier->invalidate(SharedInvalidation{false, std::string("acme"), {}});
  stop = true;
  putter.join();
  Admin admin(server);
  std::size_t entries = 0, unindexed = 0;
  std::string cursor = "0";
  do {
    const RedisReply page = admin.run({"SCAN", cursor, "MATCH", std::string(kPrefix) + "e:*", "COUNT", "1000"});
    ASSERT_EQ(page.elements.size(), 2u);
    cursor = page.elements[0].string;
    for (const auto& key : page.elements[1].elements) {
      ++entries;
      const bool in_tenant = admin.run({"ZSCORE", std::string(kPrefix) + "i:t:acme", key.string}).kind != RedisReply::Kind::kNil;
      const bool in_all = admin.run({"ZSCORE", std::string(kPrefix) + "i:all", key.string}).kind != RedisReply::Kind::kNil;
      if (!in_tenant || !in_all) ++unindexed;
    }
  } while (cursor != "0");
  EXPECT_EQ(unindexed, 0u) << "of " << entries << " entries left";
  EXPECT_GT(puts.load(), 200) << "the puts must overlap the invalidations to mean anything";
  std::printf("%d puts beside 200 invalidations, %zu entries left\n", puts.load(), entries);
  b.tier->invalidate(SharedInvalidation{false, std::string("acme"), {}});
  EXPECT_EQ(admin.run({"DBSIZE"}).integer, 0) << "the last invalidation left entries or index members";
}

TEST(RedisTier, SemanticEntriesAreMirroredToOtherInstancesAndReloadedByNewOnes) {
  SLUICE_REQUIRE_REDIS_SERVER();
  RedisServer server;
  ASSERT_TRUE(server.start());
  SteadyClock clock;
  Instance a(server, true), b(server, true);
  ASSERT_TRUE(connected(a));
  // Let B's subscription settle before A publishes.
  ASSERT_TRUE(connected(b));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  v1::CachedAnswerRecord r = record("scope", *answer("dark mode: Settings > Display"), clock);
  r.set_question("How do I enable dark mode?");
  for (int i = 0; i < 4; ++i) r.add_vector(0.5f);
  a.tier->put(a.tier->new_id(), r);
  ASSERT_TRUE(eventually([&] { return b.added_count() == 1; })) << "B mirrors A's entry";
  EXPECT_EQ(a.added_count(), 0u);
  {
    MutexLock lock(b.mu);
    EXPECT_EQ(b.added[0].question(), "How do I enable dark mode?");
    EXPECT_EQ(b.added[0].vector_size(), 4);
  }
  // An instance started later loads what is there, over several pages of SCAN and MGET, and
  // skips a value that is not a record.
  for (int i = 0; i < 1199; ++i) a.tier->put(a.tier->new_id(), r);
  Admin admin(server);
  admin.run({"SET", std::string(kPrefix) + "e:planted", "not a record"});
  Instance c(server, true);
  ASSERT_TRUE(eventually([&] { return c.added_count() == 1200; })) << c.added_count();
}

TEST(RedisTier, RedisKilledAndRestartedMidTestDegradesToL1AndResumes) {
  SLUICE_REQUIRE_REDIS_SERVER();
  RedisServer server;
  ASSERT_TRUE(server.start());
  SteadyClock clock;
  Instance a(server, false), b(server, false);
  a.tier->put("before", record("k0", *answer("zero", {"doc#9"}), clock));
  ASSERT_TRUE(b.tier->get("before").has_value());
  // Both subscribed before the outage, so that B's subscription is one the outage breaks: a
  // subscription that first comes up after the restart has missed nothing it knew of. (Without
  // this wait the test failed once under ctest -j2: B's invalidation never came.)
  ASSERT_TRUE(connected(a));
  ASSERT_TRUE(connected(b));

  server.kill();
  // Calls fail, and fail fast: no call waits more than the timeout, most do not touch the network.
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(a.tier->get("before").has_value());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
  EXPECT_FALSE(a.tier->up());
  a.tier->put("during", record("k1", *answer("one"), clock));  // dropped, no throw, no hang
  // An invalidation made during the outage is queued (not checked here: the restarted Redis is
  // empty, so there is nothing for it to delete).
  a.tier->invalidate(SharedInvalidation{false, std::nullopt, {"doc#9"}});

  ASSERT_TRUE(server.start());  // an empty Redis on the same port
  a.tier->put("after", record("k2", *answer("two", {"doc#9"}), clock));  // may fail within the retry interval
  ASSERT_TRUE(eventually([&] {
    a.tier->put("after", record("k2", *answer("two"), clock));
    return b.tier->get("after").has_value();
  })) << "L2 resumes without a restart";
  // B's subscription broke with the outage: on reconnecting it drops its L1 (it may have missed
  // invalidations) ...
  ASSERT_TRUE(eventually([&] { return b.invalidated_count() >= 1; }));
  EXPECT_TRUE(b.last_invalidation().all || !b.last_invalidation().chunks.empty());
}

}  // namespace
}  // namespace sluice::cache
