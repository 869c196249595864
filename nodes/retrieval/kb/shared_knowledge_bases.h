// shared_knowledge_base(): one KnowledgeBase per directory per process, so every node of every
// pipeline that names the same directory reads (and `POST /v1/documents` writes) the same one.
// Opened on first use with default options plus the directory; lives until process exit.
// Thread-safe.
#pragma once

#include <memory>
#include <string>

#include "nodes/retrieval/kb/knowledge_base.h"

namespace sluice::retrieval {

// Throws what KnowledgeBase's constructor throws (unloadable files).
std::shared_ptr<KnowledgeBase> shared_knowledge_base(const std::string& directory);
// A node's `knowledge_base` setting: `directory` relative to the pipeline file's `base_dir`.
// Throws std::invalid_argument naming the setting and the problem (empty, unloadable).
std::shared_ptr<KnowledgeBase> node_knowledge_base(const std::string& directory, const std::string& base_dir);

}  // namespace sluice::retrieval
