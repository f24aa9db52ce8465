// The caching policy of the CUDA device allocator and of the pinned host allocator, written
// against a small "raw memory" interface so that it is plain C++: the CUDA backend plugs in
// cudaMalloc / cudaHostAlloc and CUDA events (src/cuda/allocator.cpp), the unit tests a fake
// device with fake pointers and a fake out-of-memory (tests/core/test_caching_allocator.cpp).
//
// Note [Device caching allocator]
// cudaMalloc and cudaFree synchronise the device and cost tens of microseconds to
// milliseconds, so freed blocks are kept and handed out again. The policy follows the ideas
// of PyTorch's CUDACachingAllocator:
// - Sizes are rounded up to 512 bytes. Requests of up to 1 MiB come from the small pool,
//   whose segments (one raw allocation each) are 2 MiB; larger ones from the large pool,
//   whose segments are 20 MiB for requests under 10 MiB and the request rounded up to 2 MiB
//   otherwise. Small and large blocks never share a segment, so small long-lived tensors
//   cannot pin down large segments.
// - A free block larger than the request is split; the rest stays free (small pool: when at
//   least 512 bytes remain; large pool: when more than 1 MiB remains, so large blocks are not
//   cut into slivers). A freed block is merged with its free neighbours of the same segment.
// - Every block belongs to the stream it was allocated on and is reused only by allocations
//   on that stream: work on one stream runs in order, so memory freed by the host while a
//   kernel on the same stream still reads it is safe to hand out again for later work on that
//   stream. A block also used on other streams (record_stream) goes back to the pool only
//   when events recorded on those streams at free time have completed. A block freed while
//   another stream is the thread's current one counts as used there too: the usual way a
//   tensor of one stream's pool gets read by another is a StreamGuard around the work that
//   reads it and then drops it (cuda::capture_step's side stream), and without the event a
//   second thread allocating on the block's stream (a DataLoader worker) could take the
//   block and overwrite it while that work still runs. PyTorch leaves this to the user's
//   record_stream; the event costs a few microseconds on a free that is rare in a step.
// - When the raw allocation fails, every cached segment that is wholly free is released and
//   the allocation is tried once more; a second failure throws OutOfMemoryError with the
//   requested, free, allocated and reserved bytes. An allocation that runs out while another
//   thread captures a graph on the device first waits for that capture to end (nothing may
//   be released during one: Note [Graph memory pools]), up to kCaptureWait.
//
// Note [Graph memory pools]
// A CUDA graph replays its kernels on the addresses they had at capture, so memory that a
// captured kernel touches must stay the graph's for as long as the graph lives. While a graph
// is captured, allocations on the capturing stream come from a private pool opened for it
// (begin_private_pool): its own segments, its own free lists. Blocks freed during or after
// the capture go back to that pool, and eager allocations never look there, so no eager
// tensor can be given memory the graph will write on replay. When the graph is destroyed
// (release_private_pool), the pool's wholly free segments are released at once and the others
// as their last live block (a tensor the user still holds) is freed. While any capture is
// under way the allocator neither queries nor waits for events and releases nothing (CUDA
// forbids those calls during capture); an out-of-memory then throws without retrying on the
// capturing thread, and on another thread waits for the capture to end first. Nor
// does it record events: a block freed then that other streams used waits, unusable, until
// the capture ends (an event recorded on the capturing stream would become a node of the
// graph, and every later query of it an error). The pinned host cache has no graph pools and
// serves every device's streams: a capture on any thread holds its frees back and stops its
// event queries and releases (cudaFreeHost may synchronise, invalidating the capture).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace ignis::detail {

/// Where the caching policy gets memory and orders streams. All methods are called with the
/// allocator's lock held.
class RawMemory {
 public:
  using Stream = uintptr_t;   // an opaque stream handle (cudaStream_t in the CUDA backend)
  using EventId = uintptr_t;  // an opaque event handle
  virtual ~RawMemory() = default;
  /// nbytes of fresh memory, or nullptr when the device is out of memory (other failures
  /// throw).
  virtual void* allocate(size_t nbytes) = 0;
  virtual void release(void* ptr, size_t nbytes) = 0;
  /// Free bytes on the device as it reports them (only used in the out-of-memory message).
  virtual size_t free_bytes() = 0;
  /// Records an event after the work queued on stream so far.
  virtual EventId record_event(Stream stream) = 0;
  /// True when the event has completed (non-blocking).
  virtual bool event_done(EventId event) = 0;
  /// Blocks until the event has completed.
  virtual void wait_event(EventId event) = 0;
  virtual void destroy_event(EventId event) = 0;
};

struct CachingAllocatorStats {
  size_t allocated = 0;       // bytes of live blocks (rounded sizes)
  size_t requested = 0;       // bytes asked for by live allocations
  size_t reserved = 0;        // bytes of all segments (live + cached)
  size_t peak_allocated = 0;  // since construction or reset_peak()
  size_t peak_reserved = 0;
  size_t raw_allocations = 0;  // successful RawMemory::allocate calls (cudaMalloc)
  size_t raw_releases = 0;     // RawMemory::release calls (cudaFree)
  size_t retries = 0;          // allocations that released the cache and tried again
  size_t ooms = 0;             // allocations that failed with OutOfMemoryError
  size_t live_blocks = 0;
  size_t cached_blocks = 0;  // free blocks kept in the pools
};

class CachingAllocator {
 public:
  static constexpr size_t kRound = 512;               // every size is a multiple of this
  static constexpr size_t kSmallLimit = 1 << 20;      // <= 1 MiB: small pool
  static constexpr size_t kSmallSegment = 2 << 20;    // small pool segment
  static constexpr size_t kMidLimit = 10 << 20;       // < 10 MiB: one 20 MiB segment
  static constexpr size_t kLargeSegment = 20 << 20;
  static constexpr size_t kLargeRound = 2 << 20;      // larger: rounded up to 2 MiB
  /// How long an allocation that ran out of memory during another thread's capture waits
  /// for it to end before it fails (a step's capture takes well under a second).
  static constexpr std::chrono::seconds kCaptureWait{60};

  /// label names the memory in error messages ("cuda:0", "pinned host"). shared_by_devices:
  /// the memory serves every device's streams (pinned host memory), so a capture on any
  /// thread counts as one under way (Note [Graph memory pools]).
  CachingAllocator(RawMemory& raw, std::string label, bool shared_by_devices = false)
      : raw_(raw), label_(std::move(label)), shared_by_devices_(shared_by_devices) {}
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  /// A block of at least nbytes for use on stream (nbytes 0 gets the smallest block). Throws
  /// OutOfMemoryError after releasing the cache and retrying once.
  void* allocate(size_t nbytes, RawMemory::Stream stream);
  /// Returns a block; it is reused once the work recorded on other streams is done.
  /// freeing_stream is the freeing thread's current stream (0: not known). When it is not
  /// the block's own, work queued there may still read the block (a tensor used and dropped
  /// inside a StreamGuard), so it counts as a use, as if record_stream had been called.
  void free(void* ptr, RawMemory::Stream freeing_stream = 0);
  /// Marks a live block as used by work on stream (besides its own): its free then waits for
  /// that stream's work queued up to the free.
  void record_stream(void* ptr, RawMemory::Stream stream);
  /// Waits for pending frees, then releases every wholly free segment.
  void empty_cache();
  CachingAllocatorStats stats() const;
  void reset_peak();

  /// Graph pools (Note [Graph memory pools]). Until end_private_pool, allocations on stream
  /// come from a new pool private to one graph; returns the pool's id. Throws ValueError when
  /// the stream already routes to a pool.
  using PoolId = uint64_t;
  PoolId begin_private_pool(RawMemory::Stream stream);
  /// Allocations on the pool's stream are ordinary again; the pool keeps its memory.
  void end_private_pool(PoolId id);
  /// The graph that owned the pool is gone: ends the routing, releases the pool's wholly free
  /// segments now and the rest when their blocks are freed. Unknown ids are ignored.
  void release_private_pool(PoolId id);
  /// A graph's capture is under way on this memory: its pool routes some stream.
  bool capture_routing() const;
  /// Bytes reserved by the segments of pool id (0 for an unknown id), for tests and reports.
  size_t private_pool_reserved(PoolId id) const;
  /// The rounded size of the live block at ptr (0 if ptr is not live here).
  size_t block_size(const void* ptr) const;

  /// The rounding and segment rules of the Note, for tests and error messages.
  static size_t round_size(size_t nbytes);
  static size_t segment_size(size_t rounded);

 private:
  struct Block;
  struct BySize {
    bool operator()(const Block* a, const Block* b) const;
  };
  using Pool = std::set<Block*, BySize>;

  struct PrivatePool {
    Pool small, large;
    RawMemory::Stream stream = 0;
    bool routing = true;    // allocations on stream come here
    bool released = false;  // its graph is gone: segments go back to the device when free
    size_t reserved = 0;    // bytes of its segments
  };

  Pool& pool_of(PrivatePool* owner, bool small);
  Block* find_free(Pool& pool, size_t rounded, RawMemory::Stream stream);
  Block* new_segment(
      size_t rounded,
      RawMemory::Stream stream,
      size_t requested,
      PrivatePool* owner,
      std::unique_lock<std::mutex>& lock);
  /// Out of memory on a thread that is not capturing while another captures on this memory:
  /// waits (lock released, at most kCaptureWait) until no capture routes a stream.
  void wait_for_other_capture(std::unique_lock<std::mutex>& lock);
  void release_segment(Block* b);
  void release_if_orphaned(Block* b);
  /// A capture is under way: a graph pool routes some stream, or this thread is capturing
  /// (any thread, for memory shared by the devices).
  bool capture_underway() const;
  /// Notes that work on stream (unless it is the block's own) uses live block b.
  void add_use(Block* b, RawMemory::Stream stream);
  /// Records the events of a freed block's other streams; reusable once they are done.
  void record_uses(Block* b);
  /// Records the events of the blocks freed during a capture (none may be under way).
  void record_deferred();
  void split(Block* b, size_t rounded);
  void return_to_pool(Block* b);
  void process_events(bool wait);
  void release_whole_segments(Pool& pool);
  void release_free_segments();
  [[noreturn]] void throw_oom(size_t requested, size_t rounded, size_t seg);

  RawMemory& raw_;
  std::string label_;
  bool shared_by_devices_;
  mutable std::mutex mu_;
  std::condition_variable capture_ended_;  // notified when a graph pool stops routing
  Pool small_, large_;
  std::map<PoolId, PrivatePool> private_;  // node-based: PrivatePool pointers stay valid
  std::unordered_map<RawMemory::Stream, PrivatePool*> routing_;
  PoolId next_pool_ = 1;
  std::unordered_map<const void*, Block*> live_;
  struct Pending {
    RawMemory::EventId event;
    Block* block;
  };
  std::vector<Pending> pending_;  // events guarding freed blocks used on other streams
  std::vector<Block*> deferred_;  // freed during a capture, their events not yet recorded
  CachingAllocatorStats stats_;
};

}  // namespace ignis::detail
