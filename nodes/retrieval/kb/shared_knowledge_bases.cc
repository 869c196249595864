#include "nodes/retrieval/kb/shared_knowledge_bases.h"

#include <filesystem>
#include <map>
#include <mutex>

namespace sluice::retrieval {

std::shared_ptr<KnowledgeBase> shared_knowledge_base(const std::string& directory) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<KnowledgeBase>> open;
  std::error_code ec;
  std::string key = std::filesystem::weakly_canonical(directory, ec).string();
  if (ec) key = directory;
  std::lock_guard<std::mutex> lock(mu);
  auto& kb = open[key];
  if (!kb) {
    KnowledgeBaseOptions o;
    o.directory = key;
    kb = std::make_shared<KnowledgeBase>(o);
  }
  return kb;
}

}  // namespace sluice::retrieval
