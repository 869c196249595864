#include "nodes/retrieval/node/dense_demand.h"

#include <algorithm>
#include <map>
#include <utility>

namespace sluice::retrieval {

std::uint64_t DenseDemand::add_fuse(const RetrieveOptions& options) {
  MutexLock lock(mu_);
  fuses_.emplace_back(next_ticket_, options);
  return next_ticket_++;
}

void DenseDemand::remove_fuse(std::uint64_t ticket) {
  MutexLock lock(mu_);
  fuses_.erase(std::remove_if(fuses_.begin(), fuses_.end(), [&](const auto& f) { return f.first == ticket; }),
               fuses_.end());
}

bool DenseDemand::wanted(const KbSnapshot& snapshot) const {
  MutexLock lock(mu_);
  if (fuses_.empty()) return true;
  return std::any_of(fuses_.begin(), fuses_.end(), [&](const auto& f) { return dense_ranks(f.second, snapshot); });
}

std::shared_ptr<DenseDemand> dense_demand_for(const std::string& pipeline, const void* kb) {
  static Mutex mu;
  static std::map<std::pair<std::string, const void*>, std::weak_ptr<DenseDemand>> demands;
  MutexLock lock(mu);
  for (auto it = demands.begin(); it != demands.end();) {  // forget the pipelines that went
    it = it->second.expired() ? demands.erase(it) : std::next(it);
  }
  std::weak_ptr<DenseDemand>& slot = demands[{pipeline, kb}];
  std::shared_ptr<DenseDemand> demand = slot.lock();
  if (!demand) {
    demand = std::make_shared<DenseDemand>();
    slot = demand;
  }
  return demand;
}

}  // namespace sluice::retrieval
