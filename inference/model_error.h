// ModelError: why a model file, tokenizer input or generation request was refused. The
// message names the file (or request), the field and the problem, e.g.
//   "m.gguf: tensor 'blk.0.attn_q.weight': data [offset 4096, 16384 bytes] ends past the file (8192 bytes)".
#pragma once

#include <stdexcept>
#include <string>

namespace sluice::inference {

class ModelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace sluice::inference
