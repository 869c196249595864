#include "nodes/retrieval/eval/beir_dataset.h"

#include <nlohmann/json.hpp>

#include "graph/json_reading.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace sluice::retrieval {
namespace {

std::ifstream open_or_throw(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open for reading");
  return in;
}

}  // namespace

void for_each_jsonl_record(std::istream& in, const std::string& name, std::vector<LoadProblem>& problems,
                           const std::function<void(const nlohmann::json&, std::string, std::size_t)>& fn) {
  std::string line;
  std::size_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (auto at = json_nul_byte(line)) {
      problems.push_back({name, line_no, "not a JSON object: a NUL byte at byte " + std::to_string(*at)});
      continue;
    }
    auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) {
      problems.push_back({name, line_no, "not a JSON object"});
      continue;
    }
    auto id = j.find("_id");
    if (id == j.end() || !(id->is_string() || id->is_number_integer())) {
      problems.push_back({name, line_no, "missing or non-string \"_id\""});
      continue;
    }
    fn(j, id->is_string() ? id->get<std::string>() : std::to_string(id->get<long long>()), line_no);
  }
}

std::string json_string_field(const nlohmann::json& j, const char* name) {
  auto it = j.find(name);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string LoadProblem::to_string() const {
  return line > 0 ? file + ":" + std::to_string(line) + ": " + message : file + ": " + message;
}

std::vector<CorpusDoc> read_beir_corpus(const std::string& path, std::vector<LoadProblem>& problems) {
  std::vector<CorpusDoc> out;
  auto in = open_or_throw(path);
  for_each_jsonl_record(in, path, problems, [&](const nlohmann::json& j, std::string id, std::size_t) {
    out.push_back({std::move(id), json_string_field(j, "title"), json_string_field(j, "text")});
  });
  return out;
}

std::vector<QueryText> read_beir_queries(const std::string& path, std::vector<LoadProblem>& problems) {
  std::vector<QueryText> out;
  auto in = open_or_throw(path);
  for_each_jsonl_record(in, path, problems, [&](const nlohmann::json& j, std::string id, std::size_t) {
    out.push_back({std::move(id), json_string_field(j, "text")});
  });
  return out;
}

Qrels read_qrels_tsv(const std::string& path, std::vector<LoadProblem>& problems) {
  auto in = open_or_throw(path);
  Qrels qrels;
  std::string line;
  std::size_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    std::istringstream fields(line);
    std::string qid, did, score;
    if (!std::getline(fields, qid, '\t') || !std::getline(fields, did, '\t') ||
        !std::getline(fields, score, '\t')) {
      problems.push_back({path, line_no, "expected 3 tab-separated fields"});
      continue;
    }
    if (line_no == 1 && qid == "query-id") continue;  // BEIR header
    try {
      std::size_t used = 0;
      const int grade = std::stoi(score, &used);
      if (used != score.size()) throw std::invalid_argument("trailing");
      qrels[qid][did] = grade;
    } catch (const std::exception&) {
      problems.push_back({path, line_no, "score '" + score + "' is not an integer"});
    }
  }
  return qrels;
}

BeirDataset load_beir_dataset(const std::string& dir, const std::string& split) {
  BeirDataset ds;
  ds.corpus = read_beir_corpus(dir + "/corpus.jsonl", ds.problems);
  ds.qrels = read_qrels_tsv(dir + "/qrels/" + split + ".tsv", ds.problems);
  for (auto& q : read_beir_queries(dir + "/queries.jsonl", ds.problems)) {
    if (ds.qrels.count(q.id) > 0) ds.queries.push_back(std::move(q));
  }
  return ds;
}

}  // namespace sluice::retrieval
