// Counts heap allocations made through operator new on the current thread while a counter lives.
// The test binary replaces the global operator new/delete once (alloc_counter.cpp); they forward to
// malloc/free and count only while armed, so other tests see the default behaviour.
#pragma once

namespace lmrt::test {

class AllocationCounter {
 public:
  AllocationCounter();
  ~AllocationCounter();
  AllocationCounter(const AllocationCounter&) = delete;
  AllocationCounter& operator=(const AllocationCounter&) = delete;
  long count() const;
};

}  // namespace lmrt::test
