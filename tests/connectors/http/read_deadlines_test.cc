// ReadDeadlines and ConnectionsPerIp on their own, with time given by hand: the rules (when a
// head or body runs out), the timer set's bookkeeping (one entry per connection, re-armed as
// a body moves its deadline on, removed on stop) and the per-address counts.
#include "connectors/http/read_deadlines.h"

#include <gtest/gtest.h>
#include <netinet/in.h>

#include <cstring>
#include <utility>
#include <vector>

#include "connectors/http/connections_per_ip.h"

namespace sluice::http {
namespace {

constexpr Nanos kMs = kNanosPerMilli;

// One connection's clock and the expiries the deadlines reported.
struct Harness {
  explicit Harness(ReadDeadlines::Policy p) : deadlines(p) {}
  std::vector<std::pair<std::uint64_t, ReadTimeout>> tick(Nanos now) {
    std::vector<std::pair<std::uint64_t, ReadTimeout>> out;
    deadlines.expire_due(
        now, [&](std::uint64_t id) { return id == 1 ? &clock : nullptr; },
        [&](std::uint64_t id, ReadTimeout which) { out.emplace_back(id, which); });
    return out;
  }
  ReadDeadlines deadlines;
  ReadClock clock;
};

using Expiries = std::vector<std::pair<std::uint64_t, ReadTimeout>>;

TEST(ReadDeadlines, HeadRunsOutAtHeaderTimeoutFromItsStart) {
  Harness h({300 * kMs, 0, 0});
  h.deadlines.start_head(1, h.clock, 1000 * kMs);
  h.deadlines.start_head(1, h.clock, 1200 * kMs);  // already running: the start stands
  EXPECT_EQ(h.deadlines.next_due(), 1300 * kMs);
  EXPECT_TRUE(h.tick(1299 * kMs).empty());
  EXPECT_EQ(h.tick(1300 * kMs), (Expiries{{1, ReadTimeout::kHeader}}));
  EXPECT_EQ(h.deadlines.armed(), 0u);
  EXPECT_FALSE(h.clock.reading_head);  // stopped before it was reported
}

TEST(ReadDeadlines, BodyDeadlineMovesOnWithEachByteAndIsReArmedNotReSorted) {
  Harness h({0, 1000, 1000 * kMs});  // 1000 bytes/s after a 1 s grace
  h.deadlines.start_body(1, h.clock, 0);
  EXPECT_EQ(h.deadlines.next_due(), 1000 * kMs);
  h.clock.body_bytes = 500;  // reads only update the count
  EXPECT_EQ(h.deadlines.next_due(), 1000 * kMs);
  EXPECT_TRUE(h.tick(1000 * kMs).empty());  // due, but 500 bytes earn 0.5 s: re-armed
  EXPECT_EQ(h.deadlines.next_due(), 1500 * kMs);
  EXPECT_EQ(h.deadlines.armed(), 1u);
  EXPECT_EQ(h.tick(1500 * kMs), (Expiries{{1, ReadTimeout::kBody}}));
}

TEST(ReadDeadlines, StartingTheBodyMovesALaterHeaderEntryEarlier) {
  Harness h({10'000 * kMs, 1000, 500 * kMs});
  h.deadlines.start_head(1, h.clock, 0);
  EXPECT_EQ(h.deadlines.next_due(), 10'000 * kMs);
  h.deadlines.start_body(1, h.clock, 1000 * kMs);
  EXPECT_EQ(h.deadlines.next_due(), 1500 * kMs);
  EXPECT_EQ(h.deadlines.armed(), 1u);
  EXPECT_EQ(h.tick(1500 * kMs), (Expiries{{1, ReadTimeout::kBody}}));
}

TEST(ReadDeadlines, AnEarlierHeaderEntryOfADisabledBodyRuleExpiresNothing) {
  Harness h({300 * kMs, 0, 0});  // no body rate
  h.deadlines.start_head(1, h.clock, 0);
  h.deadlines.start_body(1, h.clock, 100 * kMs);
  EXPECT_TRUE(h.tick(300 * kMs).empty());
  EXPECT_EQ(h.deadlines.armed(), 0u);
}

TEST(ReadDeadlines, StopRemovesTheEntry) {
  Harness h({300 * kMs, 1000, 0});
  h.deadlines.start_head(1, h.clock, 0);
  h.deadlines.stop(1, h.clock);
  EXPECT_EQ(h.deadlines.armed(), 0u);
  EXPECT_EQ(h.deadlines.next_due(), std::nullopt);
  EXPECT_TRUE(h.tick(kNoDeadline).empty());
}

TEST(ReadDeadlines, DisabledRulesArmNothing) {
  Harness h({0, 0, 10 * kMs});
  h.deadlines.start_head(1, h.clock, 0);
  EXPECT_EQ(h.deadlines.armed(), 0u);
  h.deadlines.start_body(1, h.clock, 0);
  EXPECT_EQ(h.deadlines.armed(), 0u);
}

TEST(ReadDeadlines, HugeDurationsAndRatesSaturateInsteadOfWrapping) {
  Harness h({kNoDeadline - 5, 1, kNoDeadline});
  h.deadlines.start_head(1, h.clock, 1000 * kMs);
  EXPECT_EQ(h.deadlines.deadline(h.clock), kNoDeadline);
  h.deadlines.start_body(1, h.clock, 1000 * kMs);
  h.clock.body_bytes = ~std::uint64_t{0};
  EXPECT_EQ(h.deadlines.deadline(h.clock), kNoDeadline);
  EXPECT_TRUE(h.tick(1'000'000 * kMs).empty());
}

TEST(ReadDeadlines, AConnectionGoneBeforeItsTimeIsSkipped) {
  Harness h({300 * kMs, 0, 0});
  ReadClock other;
  h.deadlines.start_head(7, other, 0);  // Harness::tick finds only id 1
  EXPECT_TRUE(h.tick(300 * kMs).empty());
  EXPECT_EQ(h.deadlines.armed(), 0u);
}

std::string v4_key(std::uint32_t host_order) {
  sockaddr_storage s{};
  auto& a = reinterpret_cast<sockaddr_in&>(s);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(host_order);
  return ConnectionsPerIp::key_of(s);
}

TEST(ConnectionsPerIp, RefusesPastTheLimitAndForgetsAddressesAtZero) {
  ConnectionsPerIp per_ip(2);
  const std::string a = v4_key(0x7f000001), b = v4_key(0x0a000001);
  EXPECT_TRUE(per_ip.try_add(a));
  EXPECT_TRUE(per_ip.try_add(a));
  EXPECT_FALSE(per_ip.try_add(a));
  EXPECT_TRUE(per_ip.try_add(b));  // another address has its own quota
  EXPECT_EQ(per_ip.peers(), 2u);
  per_ip.remove(a);
  EXPECT_TRUE(per_ip.try_add(a));
  per_ip.remove(a);
  per_ip.remove(a);
  per_ip.remove(b);
  EXPECT_EQ(per_ip.peers(), 0u);  // bounded by the open connections
}

TEST(ConnectionsPerIp, MappedIpv6IsItsIpv4Address) {
  sockaddr_storage s{};
  auto& a6 = reinterpret_cast<sockaddr_in6&>(s);
  a6.sin6_family = AF_INET6;
  const unsigned char mapped[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1};
  std::memcpy(&a6.sin6_addr, mapped, sizeof mapped);
  EXPECT_EQ(ConnectionsPerIp::key_of(s), v4_key(0x7f000001));
  a6.sin6_addr = in6addr_loopback;
  EXPECT_EQ(ConnectionsPerIp::key_of(s).size(), 16u);
}

TEST(ConnectionsPerIp, ZeroIsUnlimitedAndCountsNothing) {
  ConnectionsPerIp per_ip(0);
  for (int i = 0; i < 1000; ++i) EXPECT_TRUE(per_ip.try_add(v4_key(1)));
  EXPECT_EQ(per_ip.peers(), 0u);
}

}  // namespace
}  // namespace sluice::http
