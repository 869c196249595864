#include "connectors/http/request_intake.h"
#include "graph/pipeline.h"

namespace sluice::http {
namespace {

class PipelineIntake final : public RequestIntake {
 public:
  explicit PipelineIntake(Pipeline& p) : p_(p) {}
  Status submit(const std::string& source, const RequestPtr& request) override { return p_.submit(source, request); }
  int class_index(std::string_view name) const override { return p_.class_index(name); }
  const std::vector<std::string>& class_names() const override { return p_.class_names(); }
  bool draining() const override { return p_.draining(); }
  bool ready() const override { return p_.ready(); }
  std::string admission_detail() const override { return p_.admission_detail(); }
  std::vector<std::shared_ptr<DocumentStore>> document_stores() const override { return p_.document_stores(); }
  bool answers_embeddings() const override { return p_.answers_embeddings(); }
  std::vector<CacheTier*> cache_tiers() const override { return p_.cache_tiers(); }
  std::optional<SpanContext> start_span(std::string_view incoming) const override { return p_.start_span(incoming); }
  std::uint64_t next_request_id() override { return p_.next_request_id(); }
  const std::vector<std::string>& stage_names() const override { return p_.stage_names(); }
  Clock& clock() const override { return p_.clock(); }
  MetricsRegistry& metrics() const override { return p_.metrics(); }

 private:
  Pipeline& p_;
};

}  // namespace

std::unique_ptr<RequestIntake> intake_for(Pipeline& pipeline) { return std::make_unique<PipelineIntake>(pipeline); }

}  // namespace sluice::http
