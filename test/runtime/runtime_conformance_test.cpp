// The runtime conformance suite (runtime_conformance_suite.cpp) on the host
// backend: with simulated peer access, without it (device-to-device copies
// staged through the host), and with device rows padded to 64 bytes.
#include "runtime_conformance.h"

namespace bbmm::testing {

INSTANTIATE_TEST_SUITE_P(Host, RuntimeConformance, ::testing::ValuesIn(host_backend_factories()),
                         factory_name);

}  // namespace bbmm::testing
