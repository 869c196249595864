// AdmissionController: the intake-time admission hook of the graph runtime.
//
// A node that decides admission (the `priority_router`) installs one through
// NodeContext::install_admission when it is built. Pipeline::submit then consults it
// synchronously, on the connector's thread, for every request entering at a source upstream of
// that node, after the in-flight bound and before the request reaches any stage: the decision
// and the reservation of the request's queue place happen together, so work is shed before it
// is done, never after. A rejection is completed by the pipeline with the returned status
// (kOverloaded -> HTTP 429 with Retry-After from `retry_after_seconds`) and returned to the
// connector. Every admitted request is reported back exactly once through `on_complete`, from
// the thread that completed it, whatever its outcome, so reservations are always released.
//
// Ownership: the node owns its controller; the pipeline only borrows it and stops calling it
// after drain(). Thread-safety: implementations must accept admit/on_complete from any thread.
#pragma once

#include <functional>
#include <string>

#include "graph/clock.h"
#include "graph/request.h"
#include "graph/status.h"

namespace sluice {

// Receives work that admission shed from a queue-fed source (Kafka and the like), so offline
// work completes later instead of failing. Returns true when it took the request (e.g. wrote
// it to a delayed-retry topic); the request is then completed with kOverloaded and a message
// saying it was deferred. Called without locks held; may be called from any thread.
using DeferralHook = std::function<bool(const RequestPtr& request, double retry_after_seconds)>;

class AdmissionController {
 public:
  virtual ~AdmissionController() = default;
  // Decides and reserves. Ok: the request is admitted and owns a place until on_complete.
  // Otherwise the status the request is completed with (the controller has not kept it).
  virtual Status admit(const RequestPtr& request, const std::string& source, Nanos now) = 0;
  // Once per admitted request, when it completes (any outcome).
  virtual void on_complete(Request& request, Nanos now) = 0;
  // A JSON object with the controller's state for /readyz (e.g. {"shed_level":1}).
  virtual std::string readiness_detail() const { return "{}"; }
  // Installs the hook for shed work from `source` (a queue-fed source's connector calls this).
  virtual void set_deferral_hook(const std::string& source, DeferralHook hook) {}
};

}  // namespace sluice
