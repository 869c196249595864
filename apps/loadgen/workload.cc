#include "apps/loadgen/workload.h"

#include <algorithm>
#include <fstream>
#include <stdexcept>
#include <string_view>

#include <nlohmann/json.hpp>

#include "apps/loadgen/http_response.h"
#include "graph/json_reading.h"

namespace sluice::loadgen {

namespace {

using nlohmann::json;

// The last stage of a timings object ({"stages": [{"stage": "cache", ...}, ...]}).
std::string last_stage(const json& timings) {
  if (!timings.is_object() || !timings.contains("stages") || !timings["stages"].is_array() || timings["stages"].empty()) return {};
  const json& last = timings["stages"].back();
  return last.contains("stage") && last["stage"].is_string() ? last["stage"].get<std::string>() : std::string();
}

// Appends the text of a choice: a chat message or delta's content, or a completion's text.
void append_choice_text(const json& object, std::string& text) {
  if (!object.contains("choices") || !object["choices"].is_array() || object["choices"].empty()) return;
  const json& choice = object["choices"][0];
  for (const char* field : {"message", "delta"}) {
    if (choice.contains(field) && choice[field].is_object() && choice[field].contains("content") && choice[field]["content"].is_string()) {
      text += choice[field]["content"].get<std::string>();
    }
  }
  if (choice.contains("text") && choice["text"].is_string()) text += choice["text"].get<std::string>();
}

}  // namespace

std::vector<WorkloadItem> load_workload(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument("--workload: cannot read '" + path + "'");
  std::vector<WorkloadItem> items;
  std::string line;
  for (std::size_t number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path + ":" + std::to_string(number) + ": ";
    if (auto at = json_nul_byte(line)) throw std::invalid_argument(where + "a NUL byte at byte " + std::to_string(*at));
    const json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) throw std::invalid_argument(where + "not a JSON object");
    WorkloadItem item;
    for (auto [field, out] : {std::pair{"group", &item.group}, {"kind", &item.kind}, {"prompt", &item.prompt}}) {
      if (!j.contains(field) || !j[field].is_string() || j[field].get<std::string>().empty()) {
        throw std::invalid_argument(where + "no \"" + field + "\" string");
      }
      *out = j[field].get<std::string>();
    }
    if (item.kind != "first" && item.kind != "verbatim" && item.kind != "reworded") {
      throw std::invalid_argument(where + "\"kind\" must be first, verbatim or reworded, got '" + item.kind + "'");
    }
    items.push_back(std::move(item));
  }
  if (items.empty()) throw std::invalid_argument("--workload: '" + path + "' has no lines");
  return items;
}

AnswerReading read_answer(const std::string& response, bool stream) {
  AnswerReading out;
  if (response.find("\r\n\r\n") == std::string::npos) return out;
  const std::string body = response_body(response);
  if (const std::string t = header_value(response, "x-sluice-timings"); !t.empty()) {
    out.answered_by = last_stage(json::parse(t, nullptr, false));
  }
  auto read_object = [&](const json& object) {
    if (!object.is_object()) return;
    append_choice_text(object, out.text);
    if (object.contains("sluice_timings")) out.answered_by = last_stage(object["sluice_timings"]);
  };
  if (!stream) {
    read_object(json::parse(body, nullptr, false));
    return out;
  }
  std::size_t at = 0;
  while ((at = body.find("data: ", at)) != std::string::npos) {
    const std::size_t end = body.find('\n', at);
    const std::string_view data(body.data() + at + 6, (end == std::string::npos ? body.size() : end) - at - 6);
    if (!data.empty() && data.front() == '{') read_object(json::parse(data, nullptr, false));
    if (end == std::string::npos) break;
    at = end;
  }
  return out;
}

WorkloadTally::WorkloadTally(const std::vector<WorkloadItem>& items, std::vector<std::string> cache_stages)
    : items_(items), cache_stages_(std::move(cache_stages)) {}

void WorkloadTally::add(std::size_t index, const AnswerReading& answer) {
  const WorkloadItem& item = items_[index % items_.size()];
  ++result_.answers;
  KindCounts& kind = result_.kinds[item.kind];
  ++kind.answers;
  if (answer.answered_by.empty()) ++result_.no_timings;
  else ++result_.answered_by[answer.answered_by];
  std::set<std::string>& texts = texts_[item.group];
  const bool hit = std::find(cache_stages_.begin(), cache_stages_.end(), answer.answered_by) != cache_stages_.end();
  if (!hit) {
    // Only answers made for this group are its truth: a false hit's text must not vouch for a
    // later hit on the same wrong entry.
    texts.insert(answer.text);
    return;
  }
  ++result_.hits;
  ++kind.hits;
  const bool unasked = texts.empty(), other_text = !unasked && !texts.count(answer.text);
  result_.false_hits_unasked += unasked;
  result_.false_hits_other_text += other_text;
  if (unasked || other_text) result_.false_hit_lines.push_back(index % items_.size() + 1);
}

std::string to_json(const WorkloadResult& r) {
  json j;
  j["answers"] = r.answers;
  j["answered_by"] = r.answered_by;
  for (const auto& [kind, c] : r.kinds) j["kinds"][kind] = {{"answers", c.answers}, {"hits", c.hits}};
  j["hits"] = r.hits;
  j["false_hits_unasked"] = r.false_hits_unasked;
  j["false_hits_other_text"] = r.false_hits_other_text;
  j["no_timings"] = r.no_timings;
  j["false_hit_lines"] = r.false_hit_lines;
  return j.dump();
}

}  // namespace sluice::loadgen
