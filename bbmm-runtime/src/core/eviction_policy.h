// Which unused instance a full device boxes out first. Pluggable so that a
// next-use policy (fed by the compiler's knowledge of future tiles) can
// replace least-recently-used later.
//
// Thread-safety: called under the runtime core's lock only.
#pragma once

#include <list>
#include <memory>

#include "bbmm/bbmm.h"
#include "core/instance.h"

namespace bbmm::detail {

class EvictionPolicy {
 public:
  virtual ~EvictionPolicy() = default;
  // The victim among `unused` (nonempty, in release order: front released
  // longest ago), or nullptr to refuse eviction.
  virtual Instance* choose(const std::list<Instance*>& unused) = 0;
};

// Least recently used: the instance released longest ago.
class LruPolicy : public EvictionPolicy {
 public:
  Instance* choose(const std::list<Instance*>& unused) override;
};

std::unique_ptr<EvictionPolicy> make_eviction_policy(bbmm_eviction_policy kind);

}  // namespace bbmm::detail
