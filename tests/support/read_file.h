// read_file(path): a file's whole contents, byte for byte ("" when it cannot be read), for tests
// that compare against reference files or edit a pipeline file's text.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

namespace sluice::testing {

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace sluice::testing
