// The caching policy shared by the CUDA device and pinned host allocators
// (Note [Device caching allocator] in caching_allocator.h).
#include "core/caching_allocator.h"

#include <algorithm>
#include <iterator>
#include <tuple>

#include "core/error.h"
#include "core/graph_capture.h"
#include "ignis/out_of_memory.h"

namespace ignis::detail {

struct CachingAllocator::Block {
  char* ptr = nullptr;
  size_t size = 0;       // rounded size of this block
  size_t requested = 0;  // bytes asked for while live
  RawMemory::Stream stream = 0;
  bool small = false;  // pool of the segment
  PrivatePool* owner = nullptr;  // the graph pool of the segment, null for the shared pools
  bool allocated = false;
  int pending_events = 0;  // events still guarding this freed block
  Block* prev = nullptr;   // neighbours in the same segment
  Block* next = nullptr;
  std::vector<RawMemory::Stream> uses;  // other streams that used the live block
};

bool CachingAllocator::BySize::operator()(const Block* a, const Block* b) const {
  return std::tie(a->stream, a->size, a->ptr) < std::tie(b->stream, b->size, b->ptr);
}

size_t CachingAllocator::round_size(size_t nbytes) {
  return nbytes < kRound ? kRound : (nbytes + kRound - 1) / kRound * kRound;
}

size_t CachingAllocator::segment_size(size_t rounded) {
  if (rounded <= kSmallLimit) return kSmallSegment;
  if (rounded < kMidLimit) return kLargeSegment;
  return (rounded + kLargeRound - 1) / kLargeRound * kLargeRound;
}

CachingAllocator::~CachingAllocator() {
  std::lock_guard<std::mutex> lock(mu_);
  std::set<Block*> guarded;  // freed blocks still behind events: in no pool, deleted here
  for (const Pending& p : pending_) {
    raw_.destroy_event(p.event);
    guarded.insert(p.block);
  }
  pending_.clear();
  for (Block* b : guarded) delete b;
  for (Pool* pool : {&small_, &large_})
    for (Block* b : *pool) delete b;  // the memory itself may already be gone with the device
  for (auto& [id, pp] : private_)
    for (Pool* pool : {&pp.small, &pp.large})
      for (Block* b : *pool) delete b;
  for (auto& [ptr, b] : live_) delete b;
  for (Block* b : deferred_) delete b;
}

bool CachingAllocator::capture_routing() const {
  std::lock_guard<std::mutex> lock(mu_);
  return !routing_.empty();
}

bool CachingAllocator::capture_underway() const {
  return !routing_.empty() || ignis::detail::capture_underway() ||
         (shared_by_devices_ && ignis::detail::capture_underway_in_process());
}

CachingAllocator::Pool& CachingAllocator::pool_of(PrivatePool* owner, bool small) {
  if (owner) return small ? owner->small : owner->large;
  return small ? small_ : large_;
}

void* CachingAllocator::allocate(size_t nbytes, RawMemory::Stream stream) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!capture_underway()) {  // no event records or queries during a capture
    record_deferred();
    process_events(false);
  }
  const size_t rounded = round_size(nbytes);
  const bool small = rounded <= kSmallLimit;
  const auto route = routing_.find(stream);
  PrivatePool* owner = route == routing_.end() ? nullptr : route->second;
  Pool& pool = pool_of(owner, small);
  Block* b = find_free(pool, rounded, stream);
  if (b) {
    pool.erase(b);
  } else {
    b = new_segment(rounded, stream, nbytes, owner, lock);
  }
  split(b, rounded);
  b->allocated = true;
  b->requested = nbytes;
  live_[b->ptr] = b;
  stats_.allocated += b->size;
  stats_.requested += nbytes;
  stats_.peak_allocated = std::max(stats_.peak_allocated, stats_.allocated);
  return b->ptr;
}

CachingAllocator::Block* CachingAllocator::find_free(Pool& pool, size_t rounded,
                                                     RawMemory::Stream stream) {
  Block key;
  key.stream = stream;
  key.size = rounded;
  auto it = pool.lower_bound(&key);  // the smallest block of this stream that fits
  if (it == pool.end() || (*it)->stream != stream) return nullptr;
  return *it;
}

void CachingAllocator::wait_for_other_capture(std::unique_lock<std::mutex>& lock) {
  if (routing_.empty() || ignis::detail::capture_underway()) return;
  capture_ended_.wait_for(lock, kCaptureWait, [&] { return routing_.empty(); });
}

CachingAllocator::Block* CachingAllocator::new_segment(
    size_t rounded,
    RawMemory::Stream stream,
    size_t requested,
    PrivatePool* owner,
    std::unique_lock<std::mutex>& lock) {
  const size_t seg = segment_size(rounded);
  void* p = raw_.allocate(seg);
  // Out of memory while another thread captures a graph: nothing may be released until the
  // capture ends, so wait for it (a DataLoader worker allocating the next batch while the
  // trainer captures its step), then release and retry as usual. Not for the capture's own
  // allocations (owner: its graph pool), which cannot wait for themselves.
  if (!p && !owner) wait_for_other_capture(lock);
  if (!p && !capture_underway()) {
    // Out of memory: give back every cached segment (after the pending frees complete) and
    // try once more.
    ++stats_.retries;
    process_events(true);
    release_free_segments();
    p = raw_.allocate(seg);
  }
  if (!p) throw_oom(requested, rounded, seg);
  auto* b = new Block;
  b->ptr = static_cast<char*>(p);
  b->size = seg;
  b->stream = stream;
  b->small = rounded <= kSmallLimit;
  b->owner = owner;
  if (owner) owner->reserved += seg;
  ++stats_.raw_allocations;
  stats_.reserved += seg;
  stats_.peak_reserved = std::max(stats_.peak_reserved, stats_.reserved);
  return b;
}

void CachingAllocator::split(Block* b, size_t rounded) {
  const size_t rest = b->size - rounded;
  // Small blocks split down to the rounding unit; large ones only when the rest is itself a
  // large block, so the large pool does not fill with slivers.
  if (b->small ? rest < kRound : rest <= kSmallLimit) return;
  auto* r = new Block;
  r->ptr = b->ptr + rounded;
  r->size = rest;
  r->stream = b->stream;
  r->small = b->small;
  r->owner = b->owner;
  r->prev = b;
  r->next = b->next;
  if (b->next) b->next->prev = r;
  b->next = r;
  b->size = rounded;
  pool_of(r->owner, r->small).insert(r);
}

void CachingAllocator::free(void* ptr, RawMemory::Stream freeing_stream) {
  if (!ptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(ptr);
  IGNIS_CHECK(it != live_.end(), ValueError,
              "[{} allocator] free of a pointer it did not allocate (or freed twice)", label_);
  Block* b = it->second;
  if (freeing_stream != 0) add_use(b, freeing_stream);
  live_.erase(it);
  stats_.allocated -= b->size;
  stats_.requested -= b->requested;
  b->allocated = false;
  b->requested = 0;
  if (b->uses.empty()) {
    return_to_pool(b);
    return;
  }
  // Held back (and kept from merging: pending_events) until its events are recorded: now,
  // or once a capture under way has ended (the events then come after the streams' eager
  // work, which is all the block was used by: a capture allocates from its own pool, and
  // copies from the host refuse to be captured), or at a later call when recording fails.
  b->pending_events = 1;
  deferred_.push_back(b);
  if (!capture_underway()) record_deferred();
}

void CachingAllocator::record_uses(Block* b) {
  // Used on other streams: reusable once their work queued so far has run. All or nothing: a
  // block guarded by the events of only some of its streams would come back while another
  // still used it, so a record that throws destroys those recorded before it.
  std::vector<RawMemory::EventId> events;
  events.reserve(b->uses.size());
  try {
    for (RawMemory::Stream s : b->uses) events.push_back(raw_.record_event(s));
  } catch (...) {
    for (RawMemory::EventId e : events) {
      try {
        raw_.destroy_event(e);
      } catch (...) {  // the record's error is the one to report
      }
    }
    throw;
  }
  for (RawMemory::EventId e : events) pending_.push_back({e, b});
  b->pending_events = int(events.size());
  b->uses.clear();
}

void CachingAllocator::record_deferred() {
  // The block leaves the list only once its events are recorded: a record that throws
  // leaves it, and the rest, held back for a later call.
  while (!deferred_.empty()) {
    record_uses(deferred_.back());
    deferred_.pop_back();
  }
}

void CachingAllocator::record_stream(void* ptr, RawMemory::Stream stream) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(ptr);
  IGNIS_CHECK(it != live_.end(), ValueError,
              "[{} allocator] record_stream on a pointer that is not a live block", label_);
  add_use(it->second, stream);
}

void CachingAllocator::add_use(Block* b, RawMemory::Stream stream) {
  if (stream == b->stream) return;
  if (std::find(b->uses.begin(), b->uses.end(), stream) == b->uses.end()) b->uses.push_back(stream);
}

void CachingAllocator::return_to_pool(Block* b) {
  Pool& pool = pool_of(b->owner, b->small);
  const auto mergeable = [](const Block* n) {
    return n && !n->allocated && n->pending_events == 0;
  };
  if (mergeable(b->prev)) {
    Block* p = b->prev;
    pool.erase(p);
    p->size += b->size;
    p->next = b->next;
    if (b->next) b->next->prev = p;
    delete b;
    b = p;
  }
  if (mergeable(b->next)) {
    Block* n = b->next;
    pool.erase(n);
    b->size += n->size;
    b->next = n->next;
    if (n->next) n->next->prev = b;
    delete n;
  }
  pool.insert(b);
  release_if_orphaned(b);
}

void CachingAllocator::release_if_orphaned(Block* b) {
  PrivatePool* owner = b->owner;
  if (!owner || !owner->released || b->prev || b->next || capture_underway()) return;
  pool_of(owner, b->small).erase(b);
  release_segment(b);
  if (owner->reserved == 0)
    for (auto it = private_.begin(); it != private_.end(); ++it)
      if (&it->second == owner) {
        private_.erase(it);
        break;
      }
}

void CachingAllocator::release_segment(Block* b) {
  raw_.release(b->ptr, b->size);
  ++stats_.raw_releases;
  stats_.reserved -= b->size;
  if (b->owner) b->owner->reserved -= b->size;
  delete b;
}

void CachingAllocator::process_events(bool wait) {
  // An event call may throw (the device reports an earlier asynchronous failure there). The
  // entries retired before it are gone from pending_ and the rest stay, so that no event is
  // destroyed twice and no block returned to its pool twice by a later call.
  size_t kept = 0, i = 0;
  struct Compact {
    std::vector<Pending>& pending;
    const size_t& kept;
    const size_t& next;
    ~Compact() {
      size_t k = kept;
      for (size_t j = next; j < pending.size(); ++j) pending[k++] = pending[j];
      pending.resize(k);
    }
  } compact{pending_, kept, i};
  while (i < pending_.size()) {
    const Pending p = pending_[i];
    if (wait) raw_.wait_event(p.event);
    else if (!raw_.event_done(p.event)) {
      pending_[kept++] = p;
      ++i;
      continue;
    }
    ++i;  // retired from here on, whatever the calls below report
    if (--p.block->pending_events == 0) return_to_pool(p.block);
    raw_.destroy_event(p.event);
  }
}

void CachingAllocator::release_whole_segments(Pool& pool) {
  for (auto it = pool.begin(); it != pool.end();) {
    Block* b = *it;
    if (b->prev || b->next) {
      ++it;
      continue;
    }
    it = pool.erase(it);
    release_segment(b);
  }
}

void CachingAllocator::release_free_segments() {
  release_whole_segments(small_);
  release_whole_segments(large_);
  // Pools of graphs that are gone; the live graphs' pools keep their memory.
  for (auto it = private_.begin(); it != private_.end();) {
    PrivatePool& pool = it->second;
    if (pool.released) {
      release_whole_segments(pool.small);
      release_whole_segments(pool.large);
    }
    it = pool.released && pool.reserved == 0 ? private_.erase(it) : std::next(it);
  }
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mu_);
  if (capture_underway()) return;  // waiting and cudaFree are not allowed during a capture
  record_deferred();
  process_events(true);
  release_free_segments();
}

CachingAllocator::PoolId CachingAllocator::begin_private_pool(RawMemory::Stream stream) {
  std::lock_guard<std::mutex> lock(mu_);
  IGNIS_CHECK(!routing_.contains(stream), ValueError,
              "[{} allocator] this stream is already being captured into a graph", label_);
  const PoolId id = next_pool_++;
  PrivatePool& pool = private_[id];
  pool.stream = stream;
  routing_[stream] = &pool;
  return id;
}

void CachingAllocator::end_private_pool(PoolId id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = private_.find(id);
  if (it == private_.end() || !it->second.routing) return;
  it->second.routing = false;
  routing_.erase(it->second.stream);
  capture_ended_.notify_all();
  if (!capture_underway()) record_deferred();
}

void CachingAllocator::release_private_pool(PoolId id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = private_.find(id);
  if (it == private_.end()) return;
  PrivatePool& pool = it->second;
  if (pool.routing) routing_.erase(pool.stream);
  pool.routing = false;
  pool.released = true;
  capture_ended_.notify_all();
  if (capture_underway()) return;  // another capture: released by a later free or empty_cache
  release_whole_segments(pool.small);
  release_whole_segments(pool.large);
  if (pool.reserved == 0) private_.erase(it);
}

size_t CachingAllocator::private_pool_reserved(PoolId id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = private_.find(id);
  return it == private_.end() ? 0 : it->second.reserved;
}

CachingAllocatorStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  CachingAllocatorStats s = stats_;
  s.live_blocks = live_.size();
  s.cached_blocks = small_.size() + large_.size();
  for (const auto& [id, pool] : private_) s.cached_blocks += pool.small.size() + pool.large.size();
  return s;
}

void CachingAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.peak_allocated = stats_.allocated;
  stats_.peak_reserved = stats_.reserved;
}

size_t CachingAllocator::block_size(const void* ptr) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(ptr);
  return it == live_.end() ? 0 : it->second->size;
}

void CachingAllocator::throw_oom(size_t requested, size_t rounded, size_t seg) {
  ++stats_.ooms;
  // Not queried during a CUDA graph capture, where the call may be refused.
  const bool capturing = capture_underway();
  const size_t free_bytes = capturing ? 0 : raw_.free_bytes();
  throw AllocatorOutOfMemoryError(
      fmt::format(
          "[{} allocator] out of memory: tried to allocate {} bytes ({:.2f} MiB; a {}-byte "
          "segment for a {}-byte block); {}; Ignis holds {} bytes allocated and {} bytes "
          "reserved ({})",
          label_, requested, double(requested) / (1 << 20), seg, rounded,
          capturing ? "during a CUDA graph capture (free memory not queried)"
                    : fmt::format("the device reports {} bytes free", free_bytes),
          stats_.allocated, stats_.reserved,
          capturing ? "nothing is released during a capture"
                    : "the cache was released and the allocation retried"),
      label_, requested, free_bytes, stats_.allocated, stats_.reserved);
}

}  // namespace ignis::detail
