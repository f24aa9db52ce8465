// A fake device for the caching allocator's tests (Note [Device caching allocator]): fake
// pointers from a counter, a capacity that makes allocations fail, and events that complete
// only when the test says so. It counts its calls so tests can tell what the policy asked.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <map>

#include "core/caching_allocator.h"
#include "ignis/error.h"

namespace ignis::test {
using ignis::detail::RawMemory;

class FakeDevice final : public RawMemory {
 public:
  explicit FakeDevice(size_t capacity) : capacity_(capacity) {}
  void* allocate(size_t n) override {
    ++allocate_calls;
    if (used + n > capacity_) {
      ++failed_allocations;
      return nullptr;
    }
    used += n;
    const uintptr_t p = next_;
    next_ += n + 4096;  // a gap, so segments are never adjacent by accident
    sizes_[p] = n;
    return reinterpret_cast<void*>(p);
  }
  void release(void* p, size_t n) override {
    const auto it = sizes_.find(reinterpret_cast<uintptr_t>(p));
    ASSERT_NE(it, sizes_.end()) << "release of an unknown segment";
    EXPECT_EQ(it->second, n);
    sizes_.erase(it);
    used -= n;
  }
  size_t free_bytes() override { return capacity_ - used; }
  EventId record_event(Stream s) override {
    if (s == fail_record) throw ignis::Error("fake device: cannot record an event there");
    events[++last_event] = {s, false};
    return last_event;
  }
  bool event_done(EventId e) override {
    ++queries;
    if (e == fail_query) throw ignis::Error("fake device: an earlier kernel failed");
    return events.at(e).done;  // .at: a query of a destroyed event throws out_of_range
  }
  void wait_event(EventId e) override {
    events.at(e).done = true;
    ++waits;
  }
  void destroy_event(EventId e) override { events.erase(e); }
  void complete_all() {
    for (auto& [id, ev] : events) ev.done = true;
  }

  struct Event {
    Stream stream;
    bool done;
  };
  std::map<EventId, Event> events;
  size_t used = 0;
  int allocate_calls = 0;
  int waits = 0;
  int queries = 0;  // event_done calls
  EventId fail_query = 0;  // event_done of this event throws (0: none)
  Stream fail_record = 0;  // record_event on this stream throws (0: none)
  std::atomic<int> failed_allocations{0};  // read by a second thread while the first waits

 private:
  size_t capacity_;
  uintptr_t next_ = 0x10000000;
  EventId last_event = 0;
  std::map<uintptr_t, size_t> sizes_;
};

}  // namespace ignis::test
