// `sluice run FILE` and `sluice worker FILE`: builds the pipeline, starts its sources (HTTP and
// Kafka), serves until SIGTERM/SIGINT, then drains: stop accepting (the Kafka sources stop
// fetching and hand back the jobs they hold), let in-flight requests finish within
// runtime.drain_timeout, abandon (and report) the rest, then the Kafka sources wait for their
// deliveries, commit what was acknowledged and leave their groups. A second signal during the
// drain exits at once. SIGHUP reads the HTTP sources' API keys again (a bad file keeps the old
// keys and says why). `worker` is `run` for a pipeline fed by Kafka: it refuses a file without
// a kafka source.
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
#include "connectors/kafka/kafka_job_queue.h"
#include "connectors/kafka/kafka_source.h"
#include "graph/metrics.h"
#include "graph/pipeline.h"
#include "graph/spec_validator.h"

namespace sluice::cli {

namespace {

int serve(const Args& args, const char* command, bool needs_kafka) {
  if (args.size() != 1 || args[0][0] == '-') {
    std::fprintf(stderr, "usage: sluice %s FILE\n", command);
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
  std::vector<std::shared_ptr<kafka::KafkaJobQueue>> job_queues;  // of the http sources with async_jobs
  for (const auto& s : spec.pipeline.sources()) {
    if (source_kind(s) != "http") continue;
    HttpSourceConfig config = s.http();
    // A relative key file is relative to the pipeline file, like every other path in it.
    if (!config.auth().keys_file().empty() && config.auth().keys_file()[0] != '/') {
      config.mutable_auth()->set_keys_file(spec.base_dir + "/" + config.auth().keys_file());
    }
    try {
      sources.push_back(std::make_unique<http::HttpSource>(config, s.name(), *pipeline));
      if (config.has_async_jobs()) {
        job_queues.push_back(std::make_shared<kafka::KafkaJobQueue>(config.async_jobs(), s.name(), metrics));
        sources.back()->set_job_queue(job_queues.back());
      }
    } catch (const std::invalid_argument& e) {
      std::cerr << args[0] << ": " << e.what() << "\n";
      return 2;
    }
  }
  std::vector<std::unique_ptr<kafka::KafkaSource>> workers;
  for (const auto& s : spec.pipeline.sources()) {
    if (source_kind(s) != "kafka") continue;
    try {
      workers.push_back(std::make_unique<kafka::KafkaSource>(s.kafka(), s.name(), *pipeline));
    } catch (const std::invalid_argument& e) {
      std::cerr << args[0] << ": " << e.what() << "\n";
      return 2;
    }
  }
  if (needs_kafka && workers.empty()) {
    std::cerr << args[0] << ": sluice worker runs a Kafka-fed pipeline, and this one has no kafka source "
                            "(use sluice run, or add a source of kind kafka; docs/kafka.md)\n";
    return 2;
  }
  pipeline->start();
  for (auto& w : workers) {
    try {
      w->start();
    } catch (const std::runtime_error& e) {
      std::cerr << "sluice: " << e.what() << "\n";
      return 1;
    }
    std::cerr << "sluice: pipeline '" << pipeline->name() << "' source '" << w->name() << "' consuming from Kafka\n";
  }
  for (auto& q : job_queues) {
    try {
      q->start();
    } catch (const std::runtime_error& e) {
      std::cerr << "sluice: " << e.what() << "\n";
      return 1;
    }
    // Serve once the results consumer holds its partitions, so no result of a job accepted
    // from now on is missed; a broker that is not there yet is waited for only so long.
    for (int i = 0; i < 100 && !q->ready(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (!q->ready()) std::cerr << "sluice: async jobs: the results topic is not readable yet; serving anyway\n";
  }
  for (auto& s : sources) {
    s->start();
    std::cerr << "sluice: pipeline '" << pipeline->name() << "' source '" << s->name() << "' serving on http://"
              << s->address() << "\n";
  }

  int sig = 0;
  while (sigwait(&signals, &sig) == 0 && sig == SIGHUP) {
    for (auto& s : sources) {
      const Status reloaded = s->reload_auth();
      if (reloaded.ok()) {
        std::cerr << "sluice: SIGHUP: source '" << s->name() << "' reloaded its API keys\n";
      } else {
        std::cerr << "sluice: SIGHUP: source '" << s->name() << "' keeps its previous API keys: " << reloaded.message << "\n";
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
  for (auto& w : workers) w->stop_accepting();
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
  for (auto& q : job_queues) q->stop();  // after the drain: deferred requests were still writing jobs
  for (auto& w : workers) {
    w->stop();
    const auto c = w->counts();
    std::cerr << "sluice: kafka source '" << w->name() << "': " << c.records << " records, " << c.completed
              << " answered, " << c.retried << " retried, " << c.dead_lettered << " dead-lettered, " << c.handed_back
              << " handed back; left the group\n";
  }
  return report.abandoned.empty() ? 0 : 1;
}

}  // namespace

int run(const Args& args) { return serve(args, "run", false); }
int worker(const Args& args) { return serve(args, "worker", true); }

}  // namespace sluice::cli
