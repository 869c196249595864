#include "inference/engine/shared_engines.h"

#include <map>
#include <sstream>
#include <stdexcept>

#include "graph/mutex.h"
#include "graph/system_fingerprint.h"
#include "inference/model_error.h"

namespace sluice::inference {
namespace {

struct Loaded {
  std::unique_ptr<LlamaModel> model;
  std::unique_ptr<ServingEngine> engine;
  ~Loaded() { engine.reset(); }  // the engine's thread stops before the model unmaps
};

std::string key_of(const std::string& path, const EngineOptions& o, const MetricsRegistry* metrics) {
  std::ostringstream k;
  k << path << '|' << kernels::backend_kind_name(o.backend) << '|' << o.threads << '|' << o.context << '|' << o.block_size << '|' << uint32_t(o.kv_type) << '|'
    << o.kv_budget_bytes << '|'
    << o.max_running << '|' << o.step_tokens << '|' << o.interleaved_prefill << '|' << o.prefix_cache << '|'
    << o.max_waiting << '|' << o.prefill_itl_slack << '|' << o.min_prefill_chunk << '|' << o.model_id << '|'
    << static_cast<const void*>(metrics);
  for (int c : o.class_caps) k << ',' << c;
  return k.str();
}

}  // namespace

std::shared_ptr<ServingEngine> shared_serving_engine(const std::string& model_path, const EngineOptions& options,
                                                     MetricsRegistry* metrics,
                                                     const std::vector<std::string>& class_names) {
  static Mutex mu;
  static std::map<std::string, std::weak_ptr<Loaded>> engines;  // under mu
  const std::string key = key_of(model_path, options, metrics);
  MutexLock lock(mu);
  if (auto live = engines[key].lock()) return std::shared_ptr<ServingEngine>(live, live->engine.get());
  auto loaded = std::make_shared<Loaded>();
  try {
    loaded->model = LlamaModel::load(model_path, options.backend);
    note_model_file(model_path);
    EngineOptions o = options;
    if (o.model_id.empty()) o.model_id = model_path;
    loaded->engine = std::make_unique<ServingEngine>(*loaded->model, o, metrics, class_names);
  } catch (const ModelError& e) {
    throw std::invalid_argument(e.what());
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(model_path + ": " + e.what());
  }
  engines[key] = loaded;
  return std::shared_ptr<ServingEngine>(loaded, loaded->engine.get());
}

}  // namespace sluice::inference
