// BEIR-format datasets: corpus.jsonl ({"_id","title","text"}), queries.jsonl ({"_id","text"}),
// qrels/<split>.tsv (query-id, corpus-id, score; a header line is skipped).
//
// Bad lines (invalid JSON, missing or non-string "_id", unparsable qrels row) are reported as
// LoadProblem with file and 1-based line number and skipped; the rest still loads. A missing or
// unreadable file throws std::runtime_error naming the path. Ids are kept as strings.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "nodes/retrieval/eval/metrics.h"

namespace sluice::retrieval {

struct CorpusDoc {
  std::string id;
  std::string title;
  std::string text;
};

struct QueryText {
  std::string id;
  std::string text;
};

struct LoadProblem {
  std::string file;
  std::size_t line = 0;  // 1-based; 0 when the whole file is the problem
  std::string message;
  std::string to_string() const;
};

// Calls fn(record, id, line) for each JSON-object line of `in` that has a string (or integer)
// "_id"; reports the other non-blank lines as problems against `name`.
void for_each_jsonl_record(std::istream& in, const std::string& name, std::vector<LoadProblem>& problems,
                           const std::function<void(const nlohmann::json&, std::string, std::size_t)>& fn);
// A string field of a record, "" when absent or not a string.
std::string json_string_field(const nlohmann::json& record, const char* name);

std::vector<CorpusDoc> read_beir_corpus(const std::string& path, std::vector<LoadProblem>& problems);
std::vector<QueryText> read_beir_queries(const std::string& path, std::vector<LoadProblem>& problems);
Qrels read_qrels_tsv(const std::string& path, std::vector<LoadProblem>& problems);

struct BeirDataset {
  std::vector<CorpusDoc> corpus;
  std::vector<QueryText> queries;  // only queries with judgements in the split
  Qrels qrels;
  std::vector<LoadProblem> problems;
};
BeirDataset load_beir_dataset(const std::string& dir, const std::string& split = "test");

}  // namespace sluice::retrieval
