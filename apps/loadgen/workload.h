// A replayed workload for `sluice bench --workload FILE`: the questions a user population asks,
// in order, each with its meaning group, and the tally that says what the server did with them.
//
// The file is JSON lines: {"group": "g017", "kind": "first" | "verbatim" | "reworded",
// "prompt": "..."}. Lines of one group ask the same thing; `kind` says how a line relates to the
// group's first line (bench/cache/repeat_workload.md describes the committed one).
//
// Each answer is read from the HTTP response (a JSON body or an SSE stream): its text and the
// stage that completed it, the last stage of its X-Sluice-Timings. An answer completed by one of
// the `cache_stages` is a cache hit. A hit is checked against the answers made for its own group
// (completed by another stage) before it completed: a hit on a group with no such answer, or
// whose text is none of them, was served from another question's entry: a false hit. (An entry
// stored after the hit completed cannot have served it, so the check errs only towards counting a
// true hit as false.)
//
// Thread-safety: none; one load generator thread owns a tally.
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace sluice::loadgen {

struct WorkloadItem {
  std::string group;
  std::string kind;
  std::string prompt;
};

// Throws std::invalid_argument naming the file and line ("w.jsonl:12: no \"prompt\" string").
std::vector<WorkloadItem> load_workload(const std::string& path);

// What one answer said: its text and the stage that completed it ("" when the response carried
// no timings).
struct AnswerReading {
  std::string text;
  std::string answered_by;
};
// Reads a raw HTTP response (head and body, chunked or not) of a chat or completion request.
AnswerReading read_answer(const std::string& response, bool stream);

struct KindCounts {
  std::size_t answers = 0;
  std::size_t hits = 0;
};

struct WorkloadResult {
  std::size_t answers = 0;
  std::map<std::string, std::size_t> answered_by;  // stage -> answers it completed
  std::map<std::string, KindCounts> kinds;         // "first", "verbatim", "reworded"
  std::size_t hits = 0;
  std::size_t false_hits_unasked = 0;     // a hit on a group with no completed answer
  std::size_t false_hits_other_text = 0;  // a hit whose text is none of its group's answers
  std::size_t no_timings = 0;             // answers without X-Sluice-Timings (not classified)
  std::vector<std::size_t> false_hit_lines;  // 1-based workload lines of the false hits
};

class WorkloadTally {
 public:
  WorkloadTally(const std::vector<WorkloadItem>& items, std::vector<std::string> cache_stages);
  // The answer to the request that asked items[index] (an ok answer; errors are not tallied).
  void add(std::size_t index, const AnswerReading& answer);
  const WorkloadResult& result() const { return result_; }

 private:
  const std::vector<WorkloadItem>& items_;
  const std::vector<std::string> cache_stages_;
  std::map<std::string, std::set<std::string>> texts_;  // group -> the texts of its answers so far
  WorkloadResult result_;
};

// The JSON object of a result, for the bench's output file.
std::string to_json(const WorkloadResult& r);

}  // namespace sluice::loadgen
