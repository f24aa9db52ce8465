// The graph pools of the device caching policy (Note [Graph memory pools]) on the fake device:
// a captured graph's blocks come from segments of its own, are never handed to eager
// allocations while the graph lives, and go back to the device once it is gone. Addresses and
// counts follow from the rules of Note [Device caching allocator], worked out in comments.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>
#include <vector>

#include "core/caching_allocator.h"
#include "core/fake_raw_memory.h"
#include "core/graph_capture.h"
#include "ignis/error.h"
#include "ignis/out_of_memory.h"

namespace {
using ignis::detail::CachingAllocator;
using ignis::detail::RawMemory;
using ignis::test::FakeDevice;

constexpr size_t KiB = 1024, MiB = 1024 * 1024;

bool inside(void* p, void* segment, size_t size) {
  const auto a = reinterpret_cast<uintptr_t>(p), s = reinterpret_cast<uintptr_t>(segment);
  return a >= s && a < s + size;
}

TEST(CachingAllocatorGraphPool, CaptureAllocatesFromSegmentsOfItsOwn) {
  FakeDevice dev(1024 * MiB);
  CachingAllocator a(dev, "fake");
  void* eager = a.allocate(64 * KiB, 1);
  a.free(eager);  // a cached 2 MiB segment that an eager request would reuse
  const auto pool = a.begin_private_pool(1);
  void* g1 = a.allocate(64 * KiB, 1);  // captured: a new segment, not the cached one
  EXPECT_FALSE(inside(g1, eager, 2 * MiB));
  EXPECT_EQ(a.stats().raw_allocations, 2u);
  EXPECT_EQ(a.private_pool_reserved(pool), 2 * MiB);
  // Inside the capture, freed pool memory is reused (the graph orders it like a stream).
  a.free(g1);
  void* g2 = a.allocate(64 * KiB, 1);
  EXPECT_EQ(g2, g1);
  // Another stream is not being captured: it allocates as usual.
  void* other = a.allocate(64 * KiB, 2);
  EXPECT_FALSE(inside(other, g1, 2 * MiB));
  EXPECT_EQ(a.private_pool_reserved(pool), 2 * MiB);
  a.end_private_pool(pool);
  a.free(g2);
  a.free(other);

  // After the capture the pool's whole free segment is the graph's: eager requests on the same
  // stream take the cached eager segment, then new ones, never the pool's.
  std::vector<void*> eager_blocks;
  for (int i = 0; i < 4; ++i) {
    eager_blocks.push_back(a.allocate(1 * MiB, 1));
    EXPECT_FALSE(inside(eager_blocks.back(), g1, 2 * MiB)) << "eager block " << i;
  }
  EXPECT_EQ(eager_blocks[0], eager);  // the cached eager segment, first half
  EXPECT_EQ(a.private_pool_reserved(pool), 2 * MiB);
  for (void* p : eager_blocks) a.free(p);
  a.empty_cache();  // releases the eager segments, not the live graph's
  EXPECT_EQ(a.private_pool_reserved(pool), 2 * MiB);
  EXPECT_EQ(dev.used, 2 * MiB);

  a.release_private_pool(pool);  // the graph is gone: its free segment goes back at once
  EXPECT_EQ(a.private_pool_reserved(pool), 0u);
  EXPECT_EQ(a.stats().reserved, 0u);
  EXPECT_EQ(dev.used, 0u);
}

TEST(CachingAllocatorGraphPool, LiveBlocksKeepTheirSegmentUntilFreed) {
  FakeDevice dev(1024 * MiB);
  CachingAllocator a(dev, "fake");
  const auto pool = a.begin_private_pool(5);
  void* out = a.allocate(4 * KiB, 5);  // the graph's output, still held by the user
  void* big = a.allocate(3 * MiB, 5);  // a 20 MiB large-pool segment of the graph
  a.end_private_pool(pool);
  a.free(big);
  EXPECT_EQ(a.private_pool_reserved(pool), 22 * MiB);
  const size_t releases = a.stats().raw_releases;
  a.release_private_pool(pool);  // the large segment is wholly free; the small one is not
  EXPECT_EQ(a.stats().raw_releases, releases + 1);
  EXPECT_EQ(a.private_pool_reserved(pool), 2 * MiB);
  EXPECT_EQ(a.stats().reserved, 2 * MiB);
  a.free(out);  // the last block of the orphaned segment: released on its free
  EXPECT_EQ(a.private_pool_reserved(pool), 0u);
  EXPECT_EQ(a.stats().reserved, 0u);
  EXPECT_EQ(dev.used, 0u);
  // A freed pool cannot route again; its id is unknown now and ignored.
  a.release_private_pool(pool);
  a.end_private_pool(pool);
}

// A block used on the stream being captured and freed during the capture: an event recorded
// then would be a node of the graph (CUDA then refuses every query of it). The free waits,
// unusable and unmerged, until the capture ends.
TEST(CachingAllocatorGraphPool, FreesDuringACaptureRecordTheirEventsAfterIt) {
  FakeDevice dev(1024 * MiB);
  CachingAllocator a(dev, "fake");
  void* used = a.allocate(64 * KiB, 1);  // eager, offset 0 of a 2 MiB segment
  a.record_stream(used, 7);              // also read on stream 7, captured next
  void* neighbour = a.allocate(64 * KiB, 1);  // offset 64 KiB
  const size_t events = dev.events.size();
  const auto pool = a.begin_private_pool(7);
  a.free(used);
  EXPECT_EQ(dev.events.size(), events) << "an event recorded during the capture";
  a.free(neighbour);  // free, but may not merge with the held block before it
  void* during = a.allocate(64 * KiB, 1);  // stream 1 is not captured: the shared pool
  EXPECT_NE(during, used) << "a block freed during the capture was reused before its event";
  EXPECT_EQ(during, neighbour);
  a.end_private_pool(pool);  // the events of the held blocks are recorded now
  ASSERT_EQ(dev.events.size(), events + 1);
  const auto recorded = *dev.events.rbegin();
  EXPECT_EQ(recorded.second.stream, RawMemory::Stream(7));
  void* before_done = a.allocate(64 * KiB, 1);
  EXPECT_NE(before_done, used);
  dev.complete_all();
  void* after_done = a.allocate(64 * KiB, 1);  // retires the event: the block is free again
  EXPECT_EQ(dev.events.count(recorded.first), 0u);
  EXPECT_EQ(after_done, used);
  for (void* p : {during, before_done, after_done}) a.free(p);

  // The pinned host cache has no graph pools: this thread's capture alone holds frees back.
  CachingAllocator pinned(dev, "fake pinned");
  void* host = pinned.allocate(4 * KiB, 0);
  pinned.record_stream(host, 7);
  std::vector<ignis::detail::ReplayHook> hooks;
  ignis::detail::set_capture_sink(&hooks);
  const size_t before = dev.events.size();
  pinned.free(host);
  EXPECT_EQ(dev.events.size(), before);
  ignis::detail::set_capture_sink(nullptr);
  pinned.free(pinned.allocate(4 * KiB, 0));  // the first call after the capture records it
  EXPECT_EQ(dev.events.size(), before + 1);

  // Its memory serves every device's streams: another thread's capture holds frees back too,
  // and neither waits nor releases (cudaFreeHost may synchronise). The device cache, whose
  // graph pools say when its own device is captured, is not held back by another thread.
  CachingAllocator shared(dev, "fake shared", /*shared_by_devices=*/true);
  void* held = shared.allocate(4 * KiB, 0);
  shared.record_stream(held, 7);
  void* own = pinned.allocate(4 * KiB, 0);
  pinned.record_stream(own, 7);
  std::promise<void> capturing, done;
  std::thread other([&] {
    std::vector<ignis::detail::ReplayHook> other_hooks;
    ignis::detail::set_capture_sink(&other_hooks);
    capturing.set_value();
    done.get_future().wait();
    ignis::detail::set_capture_sink(nullptr);
  });
  capturing.get_future().wait();
  const size_t before_free = dev.events.size();
  shared.free(held);
  EXPECT_EQ(dev.events.size(), before_free) << "an event recorded during another thread's capture";
  const int waits_before = dev.waits;
  const size_t reserved = shared.stats().reserved;
  shared.empty_cache();
  EXPECT_EQ(dev.waits, waits_before);
  EXPECT_EQ(shared.stats().reserved, reserved);
  pinned.free(own);  // not shared: recorded at once
  EXPECT_EQ(dev.events.size(), before_free + 1);
  done.set_value();
  other.join();
  shared.free(shared.allocate(4 * KiB, 0));  // the capture is over: held's event is recorded now
  EXPECT_EQ(dev.events.size(), before_free + 2);
}

// cuda::capture_step's case: a tensor of the caller's stream 1, read by the step on the
// side stream 7 while it is captured and dropped there. The free under stream 7 is a use of
// stream 7, recorded once the capture is over; until its event is done, stream 1 (a loader
// thread allocating a batch) cannot take the block.
TEST(CachingAllocatorGraphPool, AFreeUnderTheCapturingStreamWaitsForItsEventAfterTheCapture) {
  FakeDevice dev(1024 * MiB);
  CachingAllocator a(dev, "fake");
  void* caller = a.allocate(64 * KiB, 1);
  const auto pool = a.begin_private_pool(7);
  a.free(caller, 7);
  EXPECT_TRUE(dev.events.empty()) << "an event recorded during the capture";
  EXPECT_NE(a.allocate(64 * KiB, 1), caller);
  a.end_private_pool(pool);
  ASSERT_EQ(dev.events.size(), 1u);
  EXPECT_EQ(dev.events.begin()->second.stream, RawMemory::Stream(7));
  dev.complete_all();
  EXPECT_EQ(a.allocate(64 * KiB, 1), caller);
}

// A DataLoader worker allocating while the trainer captures its step, near the memory limit:
// nothing may be released during the capture, so instead of failing the worker waits for it
// to end, then releases the cache and retries. The capturing thread ends its capture only
// once the worker's raw allocation has failed; the allocator's lock, which the worker holds
// from that failure until it waits, orders the end after the wait has begun.
TEST(CachingAllocatorGraphPool, AnotherThreadOutOfMemoryDuringACaptureWaitsForItsEnd) {
  FakeDevice dev(30 * MiB);
  CachingAllocator a(dev, "fake");
  a.free(a.allocate(12 * MiB, 1));  // a cached 12 MiB segment
  const auto pool = a.begin_private_pool(7);
  void* graph = a.allocate(16 * MiB, 7);  // the graph's segment: 28 of 30 MiB reserved
  std::atomic<bool> returned{false};      // so a worker that never failed cannot hang the test
  std::thread capturing([&] {
    while (dev.failed_allocations.load() == 0 && !returned.load()) std::this_thread::yield();
    a.end_private_pool(pool);  // the capture ends
  });
  // 14 MiB: neither the cached segment nor the 2 MiB left can hold it.
  void* batch = nullptr;
  EXPECT_NO_THROW(batch = a.allocate(13 * MiB, 1));
  returned = true;
  capturing.join();
  EXPECT_EQ(dev.failed_allocations.load(), 1);
  EXPECT_EQ(a.stats().retries, 1u);  // after the capture: the cache released, tried again
  EXPECT_EQ(a.stats().ooms, 0u);
  a.free(batch);
  a.free(graph);
  a.release_private_pool(pool);
}

TEST(CachingAllocatorGraphPool, NoEventQueriesWaitsOrReleasesDuringACapture) {
  FakeDevice dev(30 * MiB);
  CachingAllocator a(dev, "fake");
  void* shared = a.allocate(8 * KiB, 1);
  a.record_stream(shared, 2);
  a.free(shared);  // guarded by an event on stream 2
  void* cached = a.allocate(12 * MiB, 3);
  a.free(cached);  // a cached eager 12 MiB segment
  const int queries = dev.queries;
  const auto pool = a.begin_private_pool(1);
  void* g = a.allocate(8 * KiB, 1);
  EXPECT_EQ(dev.queries, queries);  // cudaEventQuery is illegal while capturing
  a.empty_cache();                  // so are waits and cudaFree: nothing happens
  EXPECT_EQ(dev.waits, 0);
  EXPECT_EQ(a.stats().reserved, 2 * MiB + 12 * MiB + 2 * MiB);
  // Out of memory inside a capture throws at once, without releasing the cache to retry.
  EXPECT_THROW(a.allocate(16 * MiB, 1), ignis::OutOfMemoryError);
  EXPECT_EQ(a.stats().retries, 0u);
  EXPECT_EQ(dev.waits, 0);
  a.end_private_pool(pool);
  // After the capture the same request releases the cache and succeeds.
  void* big = a.allocate(16 * MiB, 1);
  EXPECT_EQ(a.stats().retries, 1u);
  EXPECT_EQ(dev.waits, 1);
  a.free(big);
  a.free(g);
  a.release_private_pool(pool);
  a.empty_cache();
  EXPECT_EQ(dev.used, 0u);
}

TEST(CachingAllocatorGraphPool, OneCapturePerStream) {
  FakeDevice dev(1024 * MiB);
  CachingAllocator a(dev, "fake");
  const auto first = a.begin_private_pool(1);
  EXPECT_THROW(a.begin_private_pool(1), ignis::ValueError);
  const auto second = a.begin_private_pool(2);  // another stream may capture at the same time
  EXPECT_NE(first, second);
  void* p1 = a.allocate(1 * KiB, 1);
  void* p2 = a.allocate(1 * KiB, 2);
  EXPECT_EQ(a.private_pool_reserved(first), 2 * MiB);
  EXPECT_EQ(a.private_pool_reserved(second), 2 * MiB);
  a.end_private_pool(first);
  a.end_private_pool(second);
  a.free(p1);
  a.free(p2);
  a.release_private_pool(first);
  a.release_private_pool(second);
  EXPECT_EQ(dev.used, 0u);
}

}  // namespace
