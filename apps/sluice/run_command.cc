// `sluice run FILE`: builds the pipeline, starts its sources, serves until SIGTERM/SIGINT,
// then drains: stop accepting, let in-flight requests finish within runtime.drain_timeout,
// abandon (and report) the rest. A second signal during the drain exits at once.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <thread>
#include <vector>

#include "apps/sluice/commands.h"
#include "apps/sluice/registry.h"
#include "connectors/http/http_source.h"
#include "graph/metrics.h"
#include "graph/pipeline.h"
#include "graph/spec_validator.h"

namespace sluice::cli {

int run(const Args& args) {
  if (args.size() != 1 || args[0][0] == '-') {
    std::fprintf(stderr, "usage: sluice run FILE\n");
    return 2;
  }
  // Every thread started from here on inherits the blocked mask; only sigwait sees the signals.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  LoadedSpec spec;
  if (!load_pipeline(args[0], &spec)) return 2;
  MetricsRegistry metrics;
  std::unique_ptr<Pipeline> pipeline;
  try {
    pipeline = Pipeline::build(spec, node_registry(), {&SteadyClock::instance(), &metrics});
  } catch (const SpecErrors& e) {
    for (const auto& err : e.errors()) std::cerr << err.to_string() << "\n";
    return 2;
  }
  std::vector<std::unique_ptr<http::HttpSource>> sources;
  for (const auto& s : spec.pipeline.sources()) {
    if (source_kind(s) == "http") sources.push_back(std::make_unique<http::HttpSource>(s.http(), s.name(), *pipeline));
  }
  pipeline->start();
  for (auto& s : sources) {
    s->start();
    std::cerr << "sluice: pipeline '" << pipeline->name() << "' source '" << s->name() << "' serving on http://"
              << s->address() << "\n";
  }

  int sig = 0;
  sigwait(&signals, &sig);
  std::cerr << "sluice: " << (sig == SIGTERM ? "SIGTERM" : "SIGINT") << ": draining " << pipeline->in_flight()
            << " requests in flight (a second signal exits at once)\n";
  std::thread([signals] {
    int again = 0;
    sigwait(&signals, &again);
    std::fprintf(stderr, "sluice: second signal during drain; exiting now\n");
    _exit(1);
  }).detach();
  for (auto& s : sources) s->stop_accepting();
  DrainReport report = pipeline->drain();
  std::cerr << "sluice: drained in " << nanos_to_seconds(report.waited) << "s; " << report.completed_during_drain
            << " finished, " << report.abandoned.size() << " abandoned";
  if (!report.abandoned.empty()) {
    std::cerr << " (request ids:";
    for (auto id : report.abandoned) std::cerr << " " << id;
    std::cerr << ")";
  }
  std::cerr << "\n";
  for (auto& s : sources) s->stop();
  return report.abandoned.empty() ? 0 : 1;
}

}  // namespace sluice::cli
