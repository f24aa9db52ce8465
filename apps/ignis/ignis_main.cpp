// The `ignis` program: the command line (main.cpp) with the real commands.
#include "command_line.h"

int main(int argc, char** argv) { return ignis_cli::run_command_line(argc, argv); }
