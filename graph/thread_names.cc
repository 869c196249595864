#include "graph/thread_names.h"

#include <pthread.h>

namespace sluice {

namespace {
thread_local bool graph_named = false;  // name_graph_worker named this thread
thread_local int graph_visits = 0;      // GraphVisits alive on this thread
}  // namespace

void name_this_thread(const char* name) { pthread_setname_np(pthread_self(), name); }

void name_graph_worker() {
  if (graph_named || graph_visits > 0) return;
  graph_named = true;
  name_this_thread("sluice-graph");
}

GraphVisit::GraphVisit() { ++graph_visits; }
GraphVisit::~GraphVisit() { --graph_visits; }

}  // namespace sluice
