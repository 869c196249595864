// The `sluice` subcommands. Each takes its arguments (after the subcommand name) and returns
// the process exit code: 0 success, 1 failure of the work, 2 bad usage or bad input files.
#pragma once

#include <string>
#include <vector>

namespace sluice::cli {

using Args = std::vector<std::string>;

int validate(const Args& args);
int graph(const Args& args);
int run(const Args& args);
int worker(const Args& args);     // apps/sluice/run_command.cc
int kafka_dev(const Args& args);  // apps/sluice/kafka_dev_command.cc
int kinds(const Args& args);
int schema(const Args& args);
int quantize(const Args& args);
int model(const Args& args);
int generate(const Args& args);
int ingest(const Args& args);
int eval(const Args& args);
int bench(const Args& args);  // apps/sluice/bench_command.cc
const char* bench_usage();     // its --help
int keys(const Args& args);   // apps/sluice/keys_command.cc

}  // namespace sluice::cli
