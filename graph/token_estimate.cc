#include "graph/token_estimate.h"

#include <algorithm>
#include <cmath>

namespace sluice {

std::int64_t estimate_tokens(std::string_view text, double chars_per_token) {
  return static_cast<std::int64_t>(std::ceil(static_cast<double>(text.size()) / chars_per_token));
}

std::int64_t estimate_prompt_tokens(const RequestInput& input, double chars_per_token) {
  std::size_t bytes = input.prompt.size();
  for (const auto& m : input.messages) bytes += m.content.size();
  auto tokens = static_cast<std::int64_t>(std::ceil(static_cast<double>(bytes) / chars_per_token));
  return std::max<std::int64_t>(1, tokens);
}

}  // namespace sluice
