// Fixed-size memory blocks recycled between threads, and an allocator over
// them for std::allocate_shared.
//
// The objects of an operation in flight (a backend's event, made on the
// application's thread when the operation is enqueued and released by the
// backend's worker when it completes) are allocated on one thread and freed on
// another. With glibc's malloc each such free goes back to the allocating
// thread's arena under that arena's lock, so the application's thread and
// every worker contend on it, more with every device added. A BlockPool keeps
// the freed blocks in one free list instead: in the steady state an operation
// allocates nothing (test/runtime/cuda_alloc_fake_test.cpp counts it).
//
// Thread-safety: take and give may be called from any thread (a spin lock held
// for a push or a pop). The pool of each block size lives for the whole
// process (it is never destroyed: blocks may come back during static
// destruction); up to kMaxFree blocks wait in it, more go back to the heap.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <new>
#include <vector>

namespace bbmm::detail {

template <size_t kSize>
class BlockPool {
 public:
  static constexpr size_t kMaxFree = size_t{1} << 14;

  static BlockPool& instance() {
    static BlockPool* const pool = new BlockPool;  // never destroyed (see above)
    return *pool;
  }

  // A block of kSize bytes, aligned as operator new aligns.
  void* take() {
    {
      Guard g(lock_);
      if (!free_.empty()) {
        void* b = free_.back();
        free_.pop_back();
        return b;
      }
    }
    return ::operator new(kSize);
  }

  // Gives back a block that take() returned.
  void give(void* b) {
    {
      Guard g(lock_);
      if (free_.size() < kMaxFree) {
        free_.push_back(b);  // within the reserved capacity: no allocation
        return;
      }
    }
    ::operator delete(b);
  }

 private:
  BlockPool() { free_.reserve(kMaxFree); }

  struct Guard {
    explicit Guard(std::atomic_flag& f) : flag(f) {
      while (flag.test_and_set(std::memory_order_acquire)) {
        while (flag.test(std::memory_order_relaxed)) {
#if defined(__x86_64__) || defined(__i386__)
          __builtin_ia32_pause();
#endif
        }
      }
    }
    ~Guard() { flag.clear(std::memory_order_release); }
    std::atomic_flag& flag;
  };

  std::atomic_flag lock_;
  std::vector<void*> free_;
};

// An allocator whose single objects come from BlockPool<sizeof(T)>; arrays
// (never asked for by allocate_shared) from the heap. Stateless: all
// instances are equal.
template <typename T>
class PoolAllocator {
 public:
  using value_type = T;
  static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__,
                "BlockPool blocks have operator new's default alignment");

  PoolAllocator() = default;
  template <typename U>
  PoolAllocator(const PoolAllocator<U>&) {}  // NOLINT: converting, as allocators are

  T* allocate(size_t n) {
    if (n != 1) return std::allocator<T>().allocate(n);
    return static_cast<T*>(BlockPool<sizeof(T)>::instance().take());
  }
  void deallocate(T* p, size_t n) {
    if (n != 1) {
      std::allocator<T>().deallocate(p, n);
      return;
    }
    BlockPool<sizeof(T)>::instance().give(p);
  }

  template <typename U>
  bool operator==(const PoolAllocator<U>&) const {
    return true;
  }
};

}  // namespace bbmm::detail
