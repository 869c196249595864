// ScopedEnv: sets or unsets environment variables for one test and restores them on scope exit
// (also when an assertion ends the test early). Not thread-safe: use it before starting threads
// that read the environment.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace sluice::testing {

class ScopedEnv {
 public:
  ScopedEnv() = default;
  // Convenience: one variable; nullptr unsets it.
  ScopedEnv(const char* name, const char* value) { set(name, value); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  ~ScopedEnv() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it)
      it->second ? setenv(it->first.c_str(), it->second->c_str(), 1) : unsetenv(it->first.c_str());
  }
  // nullptr or "" unsets the variable.
  void set(const char* name, const char* value) {
    const char* old = std::getenv(name);
    saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
    value && *value ? setenv(name, value, 1) : unsetenv(name);
  }
  void set(const char* name, const std::string& value) { set(name, value.c_str()); }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

}  // namespace sluice::testing
