#include "nodes/retrieval/kb/shared_knowledge_bases.h"

#include <filesystem>
#include <map>
#include <stdexcept>

#include "graph/mutex.h"

namespace sluice::retrieval {

std::shared_ptr<KnowledgeBase> shared_knowledge_base(const std::string& directory) {
  static Mutex mu;
  static std::map<std::string, std::shared_ptr<KnowledgeBase>> open;  // under mu
  std::error_code ec;
  std::string key = std::filesystem::weakly_canonical(directory, ec).string();
  if (ec) key = directory;
  MutexLock lock(mu);
  auto& kb = open[key];
  if (!kb) {
    KnowledgeBaseOptions o;
    o.directory = key;
    kb = std::make_shared<KnowledgeBase>(o);
  }
  return kb;
}

std::shared_ptr<KnowledgeBase> node_knowledge_base(const std::string& directory, const std::string& base_dir) {
  if (directory.empty()) throw std::invalid_argument("knowledge_base is required");
  std::filesystem::path p(directory);
  if (p.is_relative() && !base_dir.empty()) p = std::filesystem::path(base_dir) / p;
  try {
    return shared_knowledge_base(p.string());
  } catch (const std::exception& e) {
    throw std::invalid_argument("knowledge_base '" + p.string() + "': " + e.what());
  }
}

}  // namespace sluice::retrieval
