#include "nodes/retrieval/kb/shared_knowledge_bases.h"

#include <filesystem>
#include <map>

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

}  // namespace sluice::retrieval
