#include "core/eviction_policy.h"

namespace bbmm::detail {

Instance* LruPolicy::choose(const std::list<Instance*>& unused) {
  Instance* best = nullptr;
  for (Instance* inst : unused) {
    if (best == nullptr || inst->last_use < best->last_use) best = inst;
  }
  return best;
}

std::unique_ptr<EvictionPolicy> make_eviction_policy(bbmm_eviction_policy kind) {
  switch (kind) {
    case BBMM_EVICT_LRU:
      return std::make_unique<LruPolicy>();
  }
  return std::make_unique<LruPolicy>();
}

}  // namespace bbmm::detail
