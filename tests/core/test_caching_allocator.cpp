// The device caching policy (Note [Device caching allocator]) driven by a fake device: fake
// pointers from a counter, a capacity that makes allocations fail, and events that complete
// only when the test says so. Every expected pointer, size and count follows from the rules
// of the Note, worked out by hand in the comments.
#include <gtest/gtest.h>

#include "core/caching_allocator.h"
#include "core/fake_raw_memory.h"
#include "ignis/error.h"
#include "ignis/out_of_memory.h"

namespace {
using ignis::detail::CachingAllocator;
using ignis::detail::RawMemory;
using ignis::test::FakeDevice;

constexpr size_t KiB = 1024, MiB = 1024 * 1024;

char* at(void* p, size_t off) { return static_cast<char*>(p) + off; }

TEST(CachingAllocator, RoundsSizesAndChoosesSegments) {
  EXPECT_EQ(CachingAllocator::round_size(0), 512u);
  EXPECT_EQ(CachingAllocator::round_size(1), 512u);
  EXPECT_EQ(CachingAllocator::round_size(512), 512u);
  EXPECT_EQ(CachingAllocator::round_size(513), 1024u);
  EXPECT_EQ(CachingAllocator::segment_size(512), 2 * MiB);             // small pool
  EXPECT_EQ(CachingAllocator::segment_size(1 * MiB), 2 * MiB);         // still small
  EXPECT_EQ(CachingAllocator::segment_size(1 * MiB + 512), 20 * MiB);  // large, < 10 MiB
  EXPECT_EQ(CachingAllocator::segment_size(10 * MiB - 512), 20 * MiB);
  EXPECT_EQ(CachingAllocator::segment_size(10 * MiB), 10 * MiB);  // rounded to 2 MiB
  EXPECT_EQ(CachingAllocator::segment_size(11 * MiB + 512), 12 * MiB);
}

TEST(CachingAllocator, SplitsSmallSegmentsAndCoalescesOnFree) {
  FakeDevice dev(1024 * MiB);
  CachingAllocator a(dev, "fake");
  void* x = a.allocate(1000, 1);  // 1024-byte block from a new 2 MiB segment
  void* y = a.allocate(3000, 1);  // 3072 bytes split from the rest of that segment
  EXPECT_EQ(y, at(x, 1024));
  EXPECT_EQ(a.block_size(x), 1024u);
  EXPECT_EQ(a.block_size(y), 3072u);
  auto s = a.stats();
  EXPECT_EQ(s.raw_allocations, 1u);
  EXPECT_EQ(s.reserved, 2 * MiB);
  EXPECT_EQ(s.allocated, 4096u);
  EXPECT_EQ(s.requested, 4000u);
  EXPECT_EQ(s.cached_blocks, 1u);  // the rest: 2 MiB - 4 KiB

  a.free(x);  // x's block cannot merge: y is live
  EXPECT_EQ(a.stats().cached_blocks, 2u);
  a.free(y);  // y merges with x before it and the rest after it: one whole segment again
  s = a.stats();
  EXPECT_EQ(s.cached_blocks, 1u);
  EXPECT_EQ(s.allocated, 0u);
  EXPECT_EQ(s.requested, 0u);
  // The whole segment is reusable from its start, without a new raw allocation.
  void* z = a.allocate(1 * MiB, 1);
  EXPECT_EQ(z, x);
  EXPECT_EQ(a.stats().raw_allocations, 1u);
  a.empty_cache();  // z is live: its segment stays
  EXPECT_EQ(a.stats().reserved, 2 * MiB);
  a.free(z);
  a.empty_cache();
  s = a.stats();
  EXPECT_EQ(s.reserved, 0u);
  EXPECT_EQ(s.raw_releases, 1u);
  EXPECT_EQ(dev.used, 0u);
}

TEST(CachingAllocator, LargeBlocksSplitOnlyWhenTheRestIsLarge) {
  FakeDevice dev(1024 * MiB);
  CachingAllocator a(dev, "fake");
  void* x = a.allocate(2 * MiB, 7);  // a 20 MiB segment: x + 18 MiB free
  EXPECT_EQ(a.stats().reserved, 20 * MiB);
  void* y = a.allocate(17 * MiB, 7);  // fits the 18 MiB rest; 1 MiB left is not split off
  EXPECT_EQ(y, at(x, 2 * MiB));
  EXPECT_EQ(a.block_size(y), 18 * MiB);
  EXPECT_EQ(a.stats().raw_allocations, 1u);
  void* w = a.allocate(12 * MiB, 7);  // >= 10 MiB: its own segment of exactly 12 MiB
  EXPECT_EQ(a.block_size(w), 12 * MiB);
  EXPECT_EQ(a.stats().reserved, 32 * MiB);
  // Small and large pools never share: a small request gets a 2 MiB segment of its own.
  a.free(y);
  void* s = a.allocate(4 * KiB, 7);
  EXPECT_EQ(a.stats().reserved, 34 * MiB);
  EXPECT_NE(s, y);
  a.free(x);
  a.free(w);
  a.free(s);
}

TEST(CachingAllocator, BlocksAreReusedOnlyOnTheirStream) {
  FakeDevice dev(1024 * MiB);
  CachingAllocator a(dev, "fake");
  void* p = a.allocate(64 * KiB, 1);
  a.free(p);
  void* q = a.allocate(64 * KiB, 2);  // stream 2 may not take stream 1's block
  EXPECT_EQ(a.stats().raw_allocations, 2u);
  EXPECT_NE(q, p);
  void* r = a.allocate(64 * KiB, 1);  // stream 1 gets its block back
  EXPECT_EQ(r, p);
  a.free(q);
  a.free(r);
}

TEST(CachingAllocator, CrossStreamFreeWaitsForTheOtherStreamsEvent) {
  FakeDevice dev(1024 * MiB);
  CachingAllocator a(dev, "fake");
  void* p = a.allocate(8 * KiB, 1);
  a.record_stream(p, 2);  // a kernel on stream 2 reads p
  a.record_stream(p, 1);  // its own stream: nothing to record
  a.free(p);
  ASSERT_EQ(dev.events.size(), 1u);  // one event, recorded on stream 2
  EXPECT_EQ(dev.events.begin()->second.stream, 2u);
  // While stream 2 may still read p, the same request is served from the rest of the segment.
  void* q = a.allocate(8 * KiB, 1);
  EXPECT_EQ(q, at(p, 8 * KiB));
  a.free(q);
  dev.complete_all();
  // The next allocation sees the event done, returns p's block (merging it with the rest).
  void* r = a.allocate(8 * KiB, 1);
  EXPECT_EQ(r, p);
  EXPECT_TRUE(dev.events.empty());  // destroyed once done
  EXPECT_EQ(a.stats().cached_blocks, 1u);
  a.free(r);
  EXPECT_EQ(a.stats().raw_allocations, 1u);
}

TEST(CachingAllocator, AFreeUnderAnotherStreamCountsAsAUseThere) {
  FakeDevice dev(1024 * MiB);
  CachingAllocator a(dev, "fake");
  void* p = a.allocate(8 * KiB, 1);
  void* own = a.allocate(8 * KiB, 1);
  a.free(own, 1);  // freed under its own stream: back at once, no event
  EXPECT_TRUE(dev.events.empty());
  EXPECT_EQ(a.allocate(8 * KiB, 1), own);
  // p is read by work queued on stream 2 and dropped while stream 2 is current: an event
  // on stream 2 guards it, as record_stream(p, 2) would, and stream 1 cannot have it yet.
  a.free(p, 2);
  ASSERT_EQ(dev.events.size(), 1u);
  EXPECT_EQ(dev.events.begin()->second.stream, 2u);
  void* q = a.allocate(8 * KiB, 1);
  EXPECT_NE(q, p);
  dev.complete_all();
  void* r = a.allocate(8 * KiB, 1);
  EXPECT_EQ(r, p);
  // A stream that was also recorded explicitly gets one event, not two.
  a.record_stream(r, 3);
  a.free(r, 3);
  EXPECT_EQ(dev.events.size(), 1u);
  a.free(q, 0);  // no stream known: as free(q)
  EXPECT_EQ(dev.events.size(), 1u);
  a.free(own);
  dev.complete_all();
  a.empty_cache();
  EXPECT_EQ(dev.used, 0u);
}

TEST(CachingAllocator, AnEventErrorLeavesTheOtherPendingFreesIntact) {
  FakeDevice dev(1024 * MiB);
  CachingAllocator a(dev, "fake");
  void* p = a.allocate(8 * KiB, 1);
  void* q = a.allocate(8 * KiB, 1);
  a.record_stream(p, 2);
  a.record_stream(q, 3);
  a.free(p);
  a.free(q);
  ASSERT_EQ(dev.events.size(), 2u);
  const auto first = dev.events.begin()->first;
  dev.events.at(first).done = true;  // p's event is done
  dev.fail_query = first + 1;        // q's reports an earlier failure
  EXPECT_THROW(a.allocate(1 * MiB, 1), ignis::Error);
  // p's free was retired once (its event destroyed), q's stays pending.
  EXPECT_EQ(dev.events.size(), 1u);
  dev.fail_query = 0;
  dev.complete_all();
  void* r = a.allocate(16 * KiB, 1);  // both blocks back, merged: no query of p's old event
  EXPECT_EQ(r, p);
  EXPECT_TRUE(dev.events.empty());
  a.free(r);
  EXPECT_EQ(a.stats().raw_allocations, 1u);
}

// A free whose second event cannot be recorded (a failing device): the first event alone
// must not let the block come back while stream 3 may still use it. The free reports the
// error, destroys the event it did record, and holds the block until a later call records
// both.
TEST(CachingAllocator, AFreeWhoseEventsCannotAllBeRecordedHoldsTheBlock) {
  FakeDevice dev(1024 * MiB);
  CachingAllocator a(dev, "fake");
  void* p = a.allocate(8 * KiB, 1);
  a.record_stream(p, 2);
  a.record_stream(p, 3);
  dev.fail_record = 3;
  EXPECT_THROW(a.free(p), ignis::Error);
  EXPECT_TRUE(dev.events.empty()) << "stream 2's event was left guarding the block alone";
  // The next call tries again; while the device fails, so does it, and nothing is left behind.
  EXPECT_THROW(a.allocate(8 * KiB, 1), ignis::Error);
  EXPECT_TRUE(dev.events.empty());
  dev.fail_record = 0;
  void* q = a.allocate(8 * KiB, 1);  // both events recorded now; neither is done
  EXPECT_NE(q, p);
  ASSERT_EQ(dev.events.size(), 2u);
  dev.complete_all();
  a.free(q);
  void* back = a.allocate(8 * KiB, 1);
  EXPECT_EQ(back, p);
  a.free(back);
  EXPECT_EQ(a.stats().raw_allocations, 1u);
}

TEST(CachingAllocator, EmptyCacheWaitsForPendingFrees) {
  FakeDevice dev(1024 * MiB);
  CachingAllocator a(dev, "fake");
  void* p = a.allocate(8 * KiB, 1);
  a.record_stream(p, 3);
  a.free(p);
  a.empty_cache();
  EXPECT_EQ(dev.waits, 1);
  EXPECT_EQ(a.stats().reserved, 0u);
  EXPECT_EQ(dev.used, 0u);
}

TEST(CachingAllocator, OutOfMemoryReleasesTheCacheRetriesThenThrows) {
  FakeDevice dev(30 * MiB);
  CachingAllocator a(dev, "fake");
  void* x = a.allocate(12 * MiB, 1);  // a 12 MiB segment
  a.free(x);                          // cached
  // A 20 MiB segment does not fit beside the cached 12 MiB (32 > 30): the cache is released
  // and the allocation retried.
  void* y = a.allocate(20 * MiB, 1);
  auto s = a.stats();
  EXPECT_EQ(s.retries, 1u);
  EXPECT_EQ(s.raw_releases, 1u);
  EXPECT_EQ(s.reserved, 20 * MiB);
  EXPECT_EQ(dev.allocate_calls, 3);
  // 12 MiB more cannot fit even with nothing cached: OutOfMemoryError with the numbers.
  try {
    a.allocate(12 * MiB, 1);
    FAIL() << "expected OutOfMemoryError";
  } catch (const ignis::OutOfMemoryError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("[fake allocator] out of memory"), std::string::npos) << msg;
    EXPECT_NE(msg.find("tried to allocate 12582912 bytes"), std::string::npos) << msg;
    EXPECT_NE(msg.find("10485760 bytes free"), std::string::npos) << msg;
    EXPECT_NE(msg.find("20971520 bytes allocated and 20971520 bytes reserved"), std::string::npos)
        << msg;
    // The same figures as numbers, for callers that report or act on them.
    const auto* figures = dynamic_cast<const ignis::AllocatorOutOfMemoryError*>(&e);
    ASSERT_NE(figures, nullptr);
    EXPECT_EQ(figures->memory(), "fake");
    EXPECT_EQ(figures->requested(), 12 * MiB);
    EXPECT_EQ(figures->free_bytes(), 10 * MiB);
    EXPECT_EQ(figures->allocated(), 20 * MiB);
    EXPECT_EQ(figures->reserved(), 20 * MiB);
  }
  s = a.stats();
  EXPECT_EQ(s.ooms, 1u);
  EXPECT_EQ(s.retries, 2u);
  EXPECT_EQ(s.allocated, 20 * MiB);  // the failure changed nothing
  a.free(y);
}

TEST(CachingAllocator, PeakStatsAndReset) {
  FakeDevice dev(1024 * MiB);
  CachingAllocator a(dev, "fake");
  void* x = a.allocate(4 * KiB, 1);
  void* y = a.allocate(16 * KiB, 1);
  a.free(y);
  auto s = a.stats();
  EXPECT_EQ(s.allocated, 4 * KiB);
  EXPECT_EQ(s.peak_allocated, 20 * KiB);
  EXPECT_EQ(s.peak_reserved, 2 * MiB);
  a.reset_peak();
  EXPECT_EQ(a.stats().peak_allocated, 4 * KiB);
  a.free(x);
  EXPECT_EQ(a.stats().peak_allocated, 4 * KiB);
}

TEST(CachingAllocator, RejectsUnknownPointers) {
  FakeDevice dev(1024 * MiB);
  CachingAllocator a(dev, "fake");
  void* x = a.allocate(1, 1);
  a.free(x);
  EXPECT_THROW(a.free(x), ignis::ValueError);  // double free
  EXPECT_THROW(a.record_stream(x, 2), ignis::ValueError);
  a.free(nullptr);  // a no-op, as free(NULL)
}

}  // namespace
