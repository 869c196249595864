// KeyRing: the API keys an HTTP source accepts, read from a key file (YAML or JSON) or from an
// environment variable holding the same document (auth.keys_file / auth.keys_env):
//
//   keys:
//     - id: team-a-prod            # required, unique; names the key in logs and metrics
//       hash: "sha256:<salt>:<digest>"   # `sluice keys new` / `sluice keys hash`; never the key
//       scopes: [infer, retrieve]  # infer, retrieve, documents:write, admin
//       tenant: team-a             # default: the id; scopes the prefix cache (and later caches)
//       max_priority: P1           # optional: the highest class it may ask for
//       requests_per_second: 20    # optional token bucket (0: unlimited) ...
//       burst: 40                  # ... holding this many (default: max(1, requests_per_second))
//       tokens_per_minute: 100000  # optional: prompt + completion tokens, charged when answered
//
// A file with a problem is refused whole, each problem at file:line:column naming the key and
// never quoting a hash. Immutable after parse() except for the cache of verified keys: find()
// costs one SHA-256 per key the first time a key is presented and one hash-table lookup after,
// because a verified key's unsalted SHA-256 is remembered in memory (at most one entry per key).
// An unknown key costs one salted SHA-256 per key on every attempt.
// Thread-safety: find() from any thread; the rest is const.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "connectors/http/api_key_hash.h"
#include "graph/mutex.h"

namespace sluice::http {

enum Scope : std::uint8_t { kScopeInfer = 1, kScopeRetrieve = 2, kScopeDocumentsWrite = 4, kScopeAdmin = 8 };
// "infer", "retrieve", "documents:write", "admin"; nullptr for another value.
const char* scope_name(Scope scope);
std::optional<Scope> scope_from_name(std::string_view name);

struct ApiKey {
  std::string id;
  StoredKeyHash hash;
  std::uint8_t scopes = 0;  // Scope bits
  std::string tenant;
  int ceiling_class = 0;          // lowest class index it may use (0 = the highest class: any)
  std::string ceiling_name;       // max_priority as written, for messages; empty: none
  double requests_per_second = 0;  // 0: unlimited
  double burst = 0;
  double tokens_per_minute = 0;    // 0: unlimited

  bool allows(Scope scope) const { return (scopes & scope) != 0; }
};

// A key file that cannot be used; what() lists every problem, one per line.
class KeyFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class KeyRing {
 public:
  // Class names to indexes (the pipeline's priority classes): -1 for an unknown name.
  using ClassLookup = std::function<int(const std::string&)>;

  // `where` names the document in errors (the file's path, or "$VAR").
  static std::shared_ptr<const KeyRing> parse(const std::string& text, const std::string& where,
                                              const ClassLookup& class_index);

  // The key `presented` is, or nullptr.
  const ApiKey* find(std::string_view presented) const;
  const std::vector<ApiKey>& keys() const { return keys_; }

 private:
  std::vector<ApiKey> keys_;
  mutable Mutex mu_;
  // The unsalted SHA-256 of each key once verified, as a string of its 32 bytes -> index in keys_.
  mutable std::unordered_map<std::string, std::size_t> verified_ GUARDED_BY(mu_);
};

}  // namespace sluice::http
