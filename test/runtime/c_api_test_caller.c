/* A C caller of the C API, for c_api_test. In C an enum parameter is just an
 * integer, so a caller may pass any value; the C++ test goes through here to
 * pass out-of-range values without undefined behaviour on its own side. */
#include "bbmm/bbmm.h"

bbmm_status c_caller_tile_require(bbmm_tile* tile, bbmm_array* array, const int64_t* lo,
                                  const int64_t* hi, int access) {
  return bbmm_tile_require(tile, array, lo, hi, (bbmm_access)access);
}
