// command_help: what `sluice <command> --help` (or -h) prints: the command's usage, what it
// does and every flag with its default. main.cc answers --help before running a command, so a
// command never mistakes it for an argument. bench keeps its own text (bench_command.cc), which
// this returns for it.
#pragma once

#include <string>

namespace sluice::cli {

// The help of `command`; empty when there is none.
std::string command_help(const std::string& command);

}  // namespace sluice::cli
