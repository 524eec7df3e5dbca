// Counting replacements of the global operator new/delete for the tests that
// check a path allocates nothing (box_alloc_test, runtime_alloc_test,
// cuda_alloc_fake_test). They forward to malloc/free, so sanitizers still see
// every block, and count only on a thread inside allocations_in(): backend
// threads allocating meanwhile are not counted.
//
// Include from exactly one source file of a test binary (it defines the
// replacements); that is why these tests have binaries of their own.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <new>

namespace bbmm::testing {
inline thread_local bool g_counting = false;
inline thread_local int64_t g_allocations = 0;

// Heap allocations made by `f` on this thread.
template <typename F>
int64_t allocations_in(F&& f) {
  g_allocations = 0;
  g_counting = true;
  f();
  g_counting = false;
  return g_allocations;
}
}  // namespace bbmm::testing

// GCC cannot see that these operator new versions use malloc, and would warn
// that the matching deletes call free.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(std::size_t n) {
  if (bbmm::testing::g_counting) ++bbmm::testing::g_allocations;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop
