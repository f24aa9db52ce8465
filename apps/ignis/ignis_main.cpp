// The `ignis` program: the command line (main.cpp) with the real commands, after the OpenMP
// threads' waiting is settled (openmp_wait.h), which may execute the program again.
#include "command_line.h"
#include "openmp_wait.h"

int main(int argc, char** argv) {
  ignis_cli::limit_openmp_spinning(argv);
  return ignis_cli::run_command_line(argc, argv);
}
