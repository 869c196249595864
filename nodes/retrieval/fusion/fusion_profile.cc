#include "nodes/retrieval/fusion/fusion_profile.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "graph/json_reading.h"

namespace sluice::retrieval {
namespace {

constexpr const char* kFormat = "sluice.fusion_profile.v1";

// The shortest decimal that reads back as the same float: tuned weights are tenths on the grid
// and written as such (0.9, not the float's 0.8999999761), and a hand-edited value (rrf_k
// 30.477406) is kept exactly, not rounded to 4 places (which changed it on a round trip).
double rounded(float v) {
  char buf[32];
  const auto end = std::to_chars(buf, buf + sizeof buf, v).ptr;
  return std::strtod(std::string(buf, end).c_str(), nullptr);
}

nlohmann::json params_json(const FusionParams& p, bool tuned) {
  return {{"method", fusion_method_name(p.method)},
          {"bm25_weight", rounded(p.bm25_weight)},
          {"final_bm25_weight", rounded(p.final_weight())},
          {"rrf_k", rounded(p.rrf_k)},
          {"from", tuned ? "tuned" : "pipeline"}};
}

[[noreturn]] void fail(const std::string& where, const std::string& field, const std::string& problem) {
  throw std::invalid_argument("fusion profile " + where + ": " + field + ": " + problem);
}

double number(const nlohmann::json& obj, const std::string& where, const std::string& path, const char* key, double lo,
              double hi) {
  auto it = obj.find(key);
  if (it == obj.end()) fail(where, path + key, "missing");
  if (!it->is_number()) fail(where, path + key, "not a number");
  const double v = it->get<double>();
  if (!std::isfinite(v) || v < lo || v > hi) {
    std::ostringstream s;
    s << v << " is outside " << lo << "-" << hi;
    fail(where, path + key, s.str());
  }
  return v;
}

FusionParams params(const nlohmann::json& j, const std::string& where, const char* name, bool* tuned) {
  auto it = j.find(name);
  if (it == j.end()) fail(where, name, "missing");
  if (!it->is_object()) fail(where, name, "not an object");
  const std::string path = std::string(name) + ".";
  FusionParams p;
  auto m = it->find("method");
  if (m == it->end() || !m->is_string()) fail(where, path + "method", "missing or not a string");
  const std::string method = m->get<std::string>();
  if (method != "weighted" && method != "rrf") fail(where, path + "method", "'" + method + "' is not weighted or rrf");
  p.method = parse_fusion_method(method);
  p.bm25_weight = static_cast<float>(number(*it, where, path, "bm25_weight", 0, 1));
  p.final_bm25_weight = static_cast<float>(number(*it, where, path, "final_bm25_weight", 0, 1));
  p.rrf_k = static_cast<float>(number(*it, where, path, "rrf_k", 1, 10000));
  auto from = it->find("from");
  *tuned = from == it->end() || (from->is_string() && from->get<std::string>() == "tuned");
  return p;
}

}  // namespace

std::string fusion_profile_json(const FusionProfile& p) {
  nlohmann::json j{{"format", kFormat},
                   {"dataset", p.dataset},
                   {"queries", p.queries},
                   {"natural_language", params_json(p.natural_language, p.natural_language_tuned)},
                   {"exact_lookup", params_json(p.exact_lookup, p.exact_lookup_tuned)},
                   {"ndcg@10", {{"in_sample", p.in_sample_ndcg10}, {"held_out", p.held_out_ndcg10}}}};
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

FusionProfile parse_fusion_profile(const std::string& text, const std::string& where) {
  if (auto at = json_nul_byte(text)) fail(where, "(file)", "not JSON: a NUL byte at byte " + std::to_string(*at));
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) fail(where, "(file)", "not JSON");
  if (!j.is_object()) fail(where, "(file)", "not a JSON object");
  auto format = j.find("format");
  if (format == j.end() || !format->is_string() || format->get<std::string>() != kFormat) {
    fail(where, "format", std::string("not \"") + kFormat + "\"");
  }
  FusionProfile p;
  if (auto d = j.find("dataset"); d != j.end() && d->is_string()) p.dataset = d->get<std::string>();
  if (auto q = j.find("queries"); q != j.end() && q->is_number_unsigned()) p.queries = q->get<std::size_t>();
  p.natural_language = params(j, where, "natural_language", &p.natural_language_tuned);
  p.exact_lookup = params(j, where, "exact_lookup", &p.exact_lookup_tuned);
  if (auto n = j.find("ndcg@10"); n != j.end() && n->is_object()) {
    if (auto v = n->find("in_sample"); v != n->end() && v->is_number()) p.in_sample_ndcg10 = v->get<double>();
    if (auto v = n->find("held_out"); v != n->end() && v->is_number()) p.held_out_ndcg10 = v->get<double>();
  }
  return p;
}

FusionProfile read_fusion_profile(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail(path, "(file)", "cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  return parse_fusion_profile(text.str(), path);
}

}  // namespace sluice::retrieval
