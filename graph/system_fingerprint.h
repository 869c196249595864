// system_fingerprint: OpenAI's `system_fingerprint` for this process, "fp_" and 16 hex digits
// of a hash of Sluice's build (version, build time) and the identity of every model file the
// process has loaded (path, size, modification time). It changes when the build or a model
// changes, which is what clients compare it for (the same seed may then answer differently).
// A process serving several pipelines has one fingerprint covering all their models.
//
// Thread-safety: thread-safe.
#pragma once

#include <string>

namespace sluice {

// Records a model file the process serves (the engine calls it when it loads one).
void note_model_file(const std::string& path);
std::string system_fingerprint();

}  // namespace sluice
