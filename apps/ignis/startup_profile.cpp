// The start-up clock of `ignis train --profile-startup` (see startup_profile.h).
#include "startup_profile.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

namespace ignis_cli {

double seconds_since_process_start() {
  // Field 22 of /proc/self/stat is the start time in clock ticks after boot. The second field
  // (the command name, in parentheses) may hold spaces, so count fields after its ')'.
  std::ifstream f("/proc/self/stat");
  std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const auto close = stat.rfind(')');
  if (close == std::string::npos) return NAN;
  std::istringstream rest(stat.substr(close + 2));  // from field 3 on
  std::string field;
  for (int i = 3; i <= 22 && rest >> field; ++i) {
  }
  if (!rest) return NAN;
  const double start = std::stod(field) / double(sysconf(_SC_CLK_TCK));
  timespec now{};
  clock_gettime(CLOCK_BOOTTIME, &now);
  return double(now.tv_sec) + double(now.tv_nsec) * 1e-9 - start;
}

double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

void StartupProfile::mark(const char* phase) {
  marks_.emplace_back(phase, seconds_since_process_start());
}

std::string StartupProfile::line() {
  reported_ = true;
  for (const auto& mark : marks_)
    if (std::isnan(mark.second)) return "startup {\"error\": \"/proc/self/stat unreadable\"}";
  std::string out = "startup {";
  double previous = 0;
  for (const auto& [phase, at] : marks_) {
    out += fmt::format("\"{}_s\": {:.3f}, ", phase, at - previous);
    previous = at;
  }
  return out + fmt::format(
                   "\"first_step_done_s\": {:.3f}, \"cpu_s\": {:.3f}}}", previous, process_cpu_seconds());
}

}  // namespace ignis_cli
