// `sluice run FILE`: builds the pipeline, starts its sources, serves until SIGTERM/SIGINT,
// then drains: stop accepting, let in-flight requests finish within runtime.drain_timeout,
// abandon (and report) the rest. A second signal during the drain exits at once. SIGHUP reads
// the HTTP sources' API keys again (a bad file keeps the old keys and says why).
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
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
  sigaddset(&signals, SIGHUP);
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
    if (source_kind(s) != "http") continue;
    HttpSourceConfig config = s.http();
    // A relative key file is relative to the pipeline file, like every other path in it.
    if (!config.auth().keys_file().empty() && config.auth().keys_file()[0] != '/') {
      config.mutable_auth()->set_keys_file(spec.base_dir + "/" + config.auth().keys_file());
    }
    try {
      sources.push_back(std::make_unique<http::HttpSource>(config, s.name(), *pipeline));
    } catch (const std::invalid_argument& e) {
      std::cerr << args[0] << ": " << e.what() << "\n";
      return 2;
    }
  }
  pipeline->start();
  for (auto& s : sources) {
    s->start();
    std::cerr << "sluice: pipeline '" << pipeline->name() << "' source '" << s->name() << "' serving on http://"
              << s->address() << "\n";
  }

  int sig = 0;
  while (sigwait(&signals, &sig) == 0 && sig == SIGHUP) {
    for (auto& s : sources) {
      const std::string problem = s->reload_auth();
      if (problem.empty()) {
        std::cerr << "sluice: SIGHUP: source '" << s->name() << "' reloaded its API keys\n";
      } else {
        std::cerr << "sluice: SIGHUP: source '" << s->name() << "' keeps its previous API keys: " << problem << "\n";
      }
    }
  }
  std::cerr << "sluice: " << (sig == SIGTERM ? "SIGTERM" : "SIGINT") << ": draining " << pipeline->in_flight()
            << " requests in flight (a second signal exits at once)\n";
  std::thread([signals] {
    int again = SIGHUP;
    while (again == SIGHUP) sigwait(&signals, &again);  // a reload request does not end the drain
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
