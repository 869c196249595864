// `sluice keys new` and `sluice keys hash`: make API keys for a key file (docs/operations.md,
// Security). `new` prints a fresh key (shown once; give it to the client) and its stored hash
// (put it in the key file); `hash` reads a key from stdin, so it stays out of shell history,
// and prints its hash. Nothing is written to disk.
#include <cstdio>
#include <iostream>
#include <string>

#include "apps/sluice/commands.h"
#include "connectors/http/api_key_hash.h"

namespace sluice::cli {

int keys(const Args& args) {
  if (args.size() == 1 && args[0] == "new") {
    const std::string key = http::make_api_key();
    std::printf("key:  %s\nhash: %s\n", key.c_str(), http::hash_api_key(key).c_str());
    return 0;
  }
  if (args.size() == 1 && args[0] == "hash") {
    std::string key;
    std::getline(std::cin, key);
    while (!key.empty() && (key.back() == '\r' || key.back() == ' ' || key.back() == '\t')) key.pop_back();
    if (key.size() < 16) {
      std::fprintf(stderr, "sluice keys hash: read %zu characters from stdin; a key has at least 16 (use `sluice keys new`)\n",
                   key.size());
      return 2;
    }
    std::printf("%s\n", http::hash_api_key(key).c_str());
    return 0;
  }
  std::fprintf(stderr, "usage: sluice keys new | sluice keys hash < KEY\n");
  return 2;
}

}  // namespace sluice::cli
