#include "inference/encoder/shared_encoders.h"

#include <filesystem>
#include <map>
#include <thread>

#include "graph/mutex.h"

namespace sluice::inference {

std::shared_ptr<SentenceEncoder> shared_sentence_encoder(const std::string& path, int threads) {
  static Mutex mu;
  static std::map<std::pair<std::string, int>, std::weak_ptr<SentenceEncoder>> open;  // under mu
  if (threads <= 0) threads = int(std::max(1u, std::thread::hardware_concurrency()));
  std::error_code ec;
  std::string key = std::filesystem::weakly_canonical(path, ec).string();
  if (ec) key = path;
  MutexLock lock(mu);
  auto& slot = open[{key, threads}];
  if (auto live = slot.lock()) return live;
  std::shared_ptr<const UseLiteModel> model = UseLiteModel::load(path);
  auto encoder = std::make_shared<SentenceEncoder>(std::move(model), SentenceEncoderOptions{threads});
  slot = encoder;
  return encoder;
}

}  // namespace sluice::inference
