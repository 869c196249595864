#include "nodes/generation/kv_prefix_tier.h"

#include <nlohmann/json.hpp>

namespace sluice::generation {

std::string KvPrefixTier::stats_json() const {
  const inference::KvBlockStats s = engine_->kv_stats();
  return nlohmann::json{{"node", node_},
                        {"tier", "kv_prefix"},
                        {"blocks_total", s.total},
                        {"blocks_in_use", s.in_use},
                        {"blocks_shared", s.shared},
                        {"blocks_cached_idle", s.cached_idle},
                        {"hits", s.prefix_hits},
                        {"reused_tokens", s.prefix_reused_tokens},
                        {"evicted", s.evictions},
                        {"collisions_refused", s.collisions_refused}}
      .dump();
}

}  // namespace sluice::generation
