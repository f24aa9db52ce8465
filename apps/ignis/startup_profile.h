// `ignis train --profile-startup`: how long the trainer takes from the moment the process was
// started (as the kernel records it, so dynamic loading and static initialisers count) to the
// end of its first training step, split into phases. Printed as one machine-readable line,
//   startup {"to_main_s": 0.02, "setup_s": ..., "data_s": ..., "model_s": ..., ...}
// where each value is the seconds that phase took, "first_step_done_s" the total and "cpu_s"
// the CPU seconds all the process's threads used by then (what a loaded machine inflates less).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace ignis_cli {

/// Seconds from this process's start to now, from /proc/self/stat (its start in clock ticks
/// since boot) and CLOCK_BOOTTIME; resolution one clock tick (10 ms). NaN if /proc is missing.
double seconds_since_process_start();
/// CPU seconds (user + system) all threads of this process have used so far.
double process_cpu_seconds();

/// Phase marks of the start-up, each taken when the phase ends.
class StartupProfile {
 public:
  /// Records that `phase` ended now (its duration runs from the previous mark, or from the
  /// process's start for the first).
  void mark(const char* phase);
  /// The line `startup {...}`: every phase's seconds, the total ("first_step_done_s") and
  /// the process's CPU seconds ("cpu_s").
  /// Marks the profile as reported.
  std::string line();
  bool reported() const { return reported_; }

 private:
  std::vector<std::pair<std::string, double>> marks_;  ///< phase, seconds since process start
  bool reported_ = false;
};

}  // namespace ignis_cli
