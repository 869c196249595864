// The shared tier's server-side scripts (redis_tier.h): the two writes that must not interleave
// with another client's commands, as Lua that Redis runs atomically. Each states its KEYS and
// ARGV. They touch keys they derive from their arguments (an entry's indexes), so they need one
// Redis server, not a cluster.
#pragma once

#include <string_view>

namespace sluice::cache {

// A put as one script, so no client ever sees an entry without its index entries (an
// invalidation running beside it would miss it for good), and each index sheds its expired
// members as it grows. KEYS[1]: the entry; KEYS[2..]: its indexes. ARGV[1]: the record;
// ARGV[2]: the ttl in ms, 0 for none; ARGV[3]: the list naming the entry's indexes. An index
// member's score is its entry's expiry on the server's clock (+inf without a ttl), so every
// instance prunes by one clock.
inline constexpr std::string_view kPutScript = R"lua(
local ttl = tonumber(ARGV[2])
local now = redis.call('TIME')
now = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local members = ARGV[3]
if ttl > 0 then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl)
else
  redis.call('SET', KEYS[1], ARGV[1])
end
redis.call('DEL', members)
for i = 2, #KEYS do
  redis.call('RPUSH', members, KEYS[i])
  if ttl > 0 then
    redis.call('ZADD', KEYS[i], now + ttl, KEYS[1])
    redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now)
    redis.call('PEXPIRE', KEYS[i], ttl)
  else
    redis.call('ZADD', KEYS[i], '+inf', KEYS[1])
  end
end
if ttl > 0 then redis.call('PEXPIRE', members, ttl) end
return 1
)lua";

// One page of an invalidation: each entry is deleted with its list of indexes and taken out of
// every index that list names (and of the index being scanned, whose member may have outlived
// its entry). KEYS[1]: the index scanned; ARGV: the page's entries, then their index lists in
// the same order.
inline constexpr std::string_view kDeleteScript = R"lua(
for i = 1, #ARGV / 2 do
  local entry, members = ARGV[i], ARGV[#ARGV / 2 + i]
  for _, index in ipairs(redis.call('LRANGE', members, 0, -1)) do
    redis.call('ZREM', index, entry)
  end
  redis.call('ZREM', KEYS[1], entry)
  redis.call('DEL', entry, members)
end
return 1
)lua";

}  // namespace sluice::cache
