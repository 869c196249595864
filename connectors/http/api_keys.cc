#include "connectors/http/api_keys.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

namespace sluice::http {
namespace {

constexpr std::size_t kMaxIdBytes = 64;

struct Problems {
  const std::string& where;
  std::string text;
  void add(const YAML::Mark& m, const std::string& key_id, const std::string& message) {
    if (!text.empty()) text += "\n";
    text += where;
    if (m.line >= 0) text += ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
    text += ": ";
    if (!key_id.empty()) text += "key '" + key_id + "': ";
    text += message;
  }
};

bool valid_id(const std::string& id) {
  if (id.empty() || id.size() > kMaxIdBytes) return false;
  for (unsigned char c : id) {
    if (!(std::isalnum(c) || c == '-' || c == '_' || c == '.')) return false;
  }
  return true;
}

// A non-negative finite number, or nullopt with a problem added.
std::optional<double> read_rate(const YAML::Node& n, const char* field, const std::string& id, Problems& problems) {
  if (!n[field]) return 0.0;
  try {
    double v = n[field].as<double>();
    if (std::isfinite(v) && v >= 0 && v <= 1e12) return v;
  } catch (const YAML::Exception&) {
  }
  problems.add(n[field].Mark(), id, std::string(field) + " must be a number from 0 (unlimited) to 1e12");
  return std::nullopt;
}

}  // namespace

const char* scope_name(Scope scope) {
  switch (scope) {
    case kScopeInfer: return "infer";
    case kScopeRetrieve: return "retrieve";
    case kScopeDocumentsWrite: return "documents:write";
    case kScopeAdmin: return "admin";
  }
  return nullptr;
}

std::optional<Scope> scope_from_name(std::string_view name) {
  for (Scope s : {kScopeInfer, kScopeRetrieve, kScopeDocumentsWrite, kScopeAdmin}) {
    if (name == scope_name(s)) return s;
  }
  return std::nullopt;
}

std::shared_ptr<const KeyRing> KeyRing::parse(const std::string& text, const std::string& where,
                                              const ClassLookup& class_index) {
  Problems problems{where, ""};
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    problems.add(e.mark, "", "not valid YAML or JSON: " + e.msg);
    throw KeyFileError(problems.text);
  }
  if (!root.IsMap() || !root["keys"] || !root["keys"].IsSequence()) {
    problems.add(root.Mark(), "", "a key file is a mapping with a list `keys` (docs/operations.md, Security)");
    throw KeyFileError(problems.text);
  }
  for (auto it = root.begin(); it != root.end(); ++it) {
    if (it->first.Scalar() != "keys") problems.add(it->first.Mark(), "", "unknown field '" + it->first.Scalar() + "'");
  }
  auto ring = std::make_shared<KeyRing>();
  std::set<std::string> ids;
  static const std::set<std::string> kFields = {"id", "hash", "scopes", "tenant", "max_priority",
                                                "requests_per_second", "burst", "tokens_per_minute"};
  for (const YAML::Node& n : root["keys"]) {
    if (!n.IsMap()) {
      problems.add(n.Mark(), "", "each key is a mapping with at least id, hash and scopes");
      continue;
    }
    ApiKey key;
    key.id = n["id"] && n["id"].IsScalar() ? n["id"].Scalar() : "";
    if (!valid_id(key.id)) {
      problems.add(n["id"] ? n["id"].Mark() : n.Mark(), "",
                   "id must be 1-64 characters of letters, digits, '-', '_' and '.' (it names the key in metrics)");
      continue;
    }
    if (!ids.insert(key.id).second) problems.add(n["id"].Mark(), key.id, "the id is used by another key");
    for (auto f = n.begin(); f != n.end(); ++f) {
      if (!kFields.count(f->first.Scalar())) problems.add(f->first.Mark(), key.id, "unknown field '" + f->first.Scalar() + "'");
    }
    std::string error;
    if (!n["hash"] || !n["hash"].IsScalar()) {
      problems.add(n.Mark(), key.id, "missing hash (make one with `sluice keys new` or `sluice keys hash`)");
    } else if (auto h = parse_stored_key_hash(n["hash"].Scalar(), &error)) {
      key.hash = *h;
    } else {
      problems.add(n["hash"].Mark(), key.id, error);
    }
    if (!n["scopes"] || !n["scopes"].IsSequence() || n["scopes"].size() == 0) {
      problems.add(n["scopes"] ? n["scopes"].Mark() : n.Mark(), key.id,
                   "scopes must be a non-empty list of infer, retrieve, documents:write, admin");
    } else {
      for (const YAML::Node& s : n["scopes"]) {
        auto scope = s.IsScalar() ? scope_from_name(s.Scalar()) : std::nullopt;
        if (!scope) {
          problems.add(s.Mark(), key.id, "scope '" + (s.IsScalar() ? s.Scalar() : std::string("?")) +
                                             "' is not one of infer, retrieve, documents:write, admin");
        } else {
          key.scopes |= *scope;
        }
      }
    }
    key.tenant = n["tenant"] && n["tenant"].IsScalar() ? n["tenant"].Scalar() : key.id;
    if (key.tenant.empty() || key.tenant.size() > kMaxIdBytes) {
      problems.add(n["tenant"].Mark(), key.id, "tenant must be 1-64 bytes");
    }
    if (n["max_priority"]) {
      key.ceiling_name = n["max_priority"].IsScalar() ? n["max_priority"].Scalar() : "";
      key.ceiling_class = class_index(key.ceiling_name);
      if (key.ceiling_class < 0) {
        problems.add(n["max_priority"].Mark(), key.id, "max_priority '" + key.ceiling_name + "' is not a priority class of this pipeline");
      }
    }
    auto rps = read_rate(n, "requests_per_second", key.id, problems);
    auto burst = read_rate(n, "burst", key.id, problems);
    auto tpm = read_rate(n, "tokens_per_minute", key.id, problems);
    if (rps && burst && tpm) {
      key.requests_per_second = *rps;
      key.burst = n["burst"] ? *burst : std::max(1.0, *rps);
      key.tokens_per_minute = *tpm;
      if (key.requests_per_second > 0 && key.burst < 1) {
        problems.add(n["burst"].Mark(), key.id, "burst must be at least 1 when requests_per_second is set");
      }
    }
    ring->keys_.push_back(std::move(key));
  }
  if (!problems.text.empty()) throw KeyFileError(problems.text);
  return ring;
}

const ApiKey* KeyRing::find(std::string_view presented) const {
  const Sha256Digest fast = sha256(presented);
  const std::string fast_key(reinterpret_cast<const char*>(fast.data()), fast.size());
  {
    MutexLock lock(mu_);
    if (auto it = verified_.find(fast_key); it != verified_.end()) return &keys_[it->second];
  }
  for (std::size_t i = 0; i < keys_.size(); ++i) {
    if (key_matches(keys_[i].hash, presented)) {
      MutexLock lock(mu_);
      verified_.emplace(fast_key, i);
      return &keys_[i];
    }
  }
  return nullptr;
}

}  // namespace sluice::http
