// The trainer's out-of-memory message (see out_of_memory_report.h).
#include "out_of_memory_report.h"

#include <fmt/format.h>
#include <ignis/out_of_memory.h>

#include <filesystem>

#include "options.h"
#include "run_dir.h"

namespace ignis_cli {
namespace {

std::string bytes_text(size_t n) {
  const double gib = double(size_t(1) << 30), mib = double(size_t(1) << 20);
  return double(n) >= gib ? fmt::format("{:.2f} GiB", double(n) / gib)
                          : fmt::format("{:.2f} MiB", double(n) / mib);
}

// What to change: half the batch, or the same batch in twice as many micro-batches.
std::string suggestion(const TrainProgress& p) {
  if (p.batch_size <= 0) return "Train a smaller --model or on another --device";
  if (p.batch_size == 1)
    return "A batch of 1 is the smallest: train a smaller --model or on another --device";
  const int64_t half = p.batch_size / 2, more = 2 * p.accumulate;
  std::string text = fmt::format("Train with a smaller --batch-size (e.g. {})", half);
  if (p.batch_size % more == 0)
    text += fmt::format(
        ", or keep the batch of {} with --accumulate {} (micro-batches of {})",
        p.batch_size,
        more,
        p.batch_size / more);
  if (p.amp == "off") text += ", or train in mixed precision with --amp bf16";
  return text + ", or let --batch-size auto find the largest that fits";
}

}  // namespace

std::string out_of_memory_message(const ignis::OutOfMemoryError& e, const TrainProgress& p) {
  std::string text = "out of memory";
  const auto* figures = dynamic_cast<const ignis::AllocatorOutOfMemoryError*>(&e);
  if (figures) text += " on " + figures->memory();
  if (p.batch_size > 0) text += fmt::format(" at batch size {}", p.batch_size);
  if (p.epoch > 0)
    text += fmt::format(" (epoch {} step {}/{})", p.epoch, p.step, p.steps_per_epoch);
  if (figures)
    text += fmt::format(
        ": tried to allocate {} with {} free; Ignis holds {} allocated and {} reserved",
        bytes_text(figures->requested()),
        bytes_text(figures->free_bytes()),
        bytes_text(figures->allocated()),
        bytes_text(figures->reserved()));
  else
    text += fmt::format(" ({})", e.what());
  text += ". " + suggestion(p);
  if (!p.run_dir.empty()) {
    const std::string ckpt = run_file(p.run_dir, kCheckpointFile);
    std::error_code ec;
    text += std::filesystem::exists(ckpt, ec)
                ? fmt::format("; the last checkpoint, {}, is intact", ckpt)
                : std::string("; no checkpoint had been written yet");
  }
  return text;
}

int run_reporting_out_of_memory(const std::function<int(TrainProgress&)>& train) {
  TrainProgress progress;
  try {
    return train(progress);
  } catch (const ignis::OutOfMemoryError& e) {
    throw UsageError(out_of_memory_message(e, progress));
  }
}

}  // namespace ignis_cli
