#include "nodes/retrieval/kb/answer_sentences.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

#include "nodes/retrieval/chunk/chunker.h"

namespace sluice::retrieval {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

std::string_view trim_left(std::string_view s) {
  const std::size_t i = s.find_first_not_of(" \t");
  return i == std::string_view::npos ? std::string_view() : s.substr(i);
}

struct Line {
  std::size_t begin, end;  // [begin, end) without the '\n'
  bool code;               // inside a fenced block, a fence, or indented code
  bool structure;          // a table row or heading
};

bool is_fence(std::string_view line) { return trim_left(line).substr(0, 3) == "```"; }
bool fence_opens_block(std::string_view line) {  // "```yaml": only an opening fence has an info string
  std::string_view rest = trim_left(line).substr(3);
  return rest.find_first_not_of(" \t`") != std::string_view::npos;
}
bool is_list_item(std::string_view t) {
  if (t.size() >= 2 && (t[0] == '-' || t[0] == '*' || t[0] == '+') && t[1] == ' ') return true;
  std::size_t i = 0;
  while (i < t.size() && is_digit(t[i])) ++i;
  return i > 0 && i + 1 < t.size() && (t[i] == '.' || t[i] == ')') && t[i + 1] == ' ';
}

std::vector<Line> classify_lines(std::string_view text) {
  std::vector<Line> lines;
  for (std::size_t b = 0; b <= text.size();) {
    std::size_t e = text.find('\n', b);
    if (e == std::string_view::npos) e = text.size();
    lines.push_back({b, e, false, false});
    b = e + 1;
  }
  // Does the chunk begin inside a fenced block? Its first fence closes one when it is bare and
  // the next fence opens another.
  bool in_fence = false;
  {
    std::vector<std::size_t> fences;
    for (std::size_t i = 0; i < lines.size() && fences.size() < 2; ++i) {
      if (is_fence(text.substr(lines[i].begin, lines[i].end - lines[i].begin))) fences.push_back(i);
    }
    auto line = [&](std::size_t i) { return text.substr(lines[i].begin, lines[i].end - lines[i].begin); };
    if (fences.size() == 2 && !fence_opens_block(line(fences[0])) && fence_opens_block(line(fences[1])))
      in_fence = true;
  }
  bool previous_blank = true, previous_indented_code = false;
  for (Line& l : lines) {
    const std::string_view raw = text.substr(l.begin, l.end - l.begin);
    const std::string_view t = trim_left(raw);
    if (is_fence(raw)) {
      l.code = true;
      in_fence = !in_fence;
    } else if (in_fence) {
      l.code = true;
    } else if (!t.empty() && (raw.substr(0, 4) == "    " || raw[0] == '\t') && !is_list_item(t) &&
               (previous_blank || previous_indented_code)) {
      l.code = true;
    }
    previous_indented_code = l.code && !in_fence && !is_fence(raw);
    l.structure = !t.empty() && (t[0] == '|' || t[0] == '#');
    previous_blank = t.empty();
  }
  return lines;
}

// A sentence that starts mid-sentence: where a chunk or the splitter cut inside one.
bool is_fragment(std::string_view sentence) {
  if (sentence.empty()) return true;
  const unsigned char c = static_cast<unsigned char>(sentence[0]);
  if (std::islower(c) || is_digit(static_cast<char>(c))) return true;
  return c == ')' || c == ']' || c == ',' || c == ';' || c == ':' || c == '.' || c == '}';
}

bool is_unit(std::string_view w) {
  static constexpr std::array<std::string_view, 20> kUnits = {
      "s", "ms", "us", "µs", "ns", "%", "x", "min", "h", "GiB", "MiB", "KiB", "GB", "MB", "KB",
      "tok/s", "req/s", "jobs/s", "tokens/s", "requests/s"};
  return std::find(kUnits.begin(), kUnits.end(), w) != kUnits.end();
}

std::string_view strip_punct(std::string_view w) {
  const std::string_view kPunct = "()[]{},;:\"'`*";
  while (!w.empty() && kPunct.find(w.front()) != std::string_view::npos) w.remove_prefix(1);
  while (!w.empty() && (kPunct.find(w.back()) != std::string_view::npos || w.back() == '.')) w.remove_suffix(1);
  return w;
}

}  // namespace

std::size_t count_figures(std::string_view text) {
  std::vector<std::string_view> words;
  for (std::size_t i = 0; i < text.size();) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    std::size_t j = i;
    while (j < text.size() && !std::isspace(static_cast<unsigned char>(text[j]))) ++j;
    if (j > i) words.push_back(strip_punct(text.substr(i, j - i)));
    i = j;
  }
  std::size_t figures = 0;
  for (std::size_t k = 0; k < words.size(); ++k) {
    const std::string_view w = words[k];
    if (w.empty() || !is_digit(w[0])) continue;  // P0, p99, v1: identifiers, not figures
    std::size_t d = 0;
    while (d < w.size() && (is_digit(w[d]) || ((w[d] == '.' || w[d] == ',' || w[d] == '-') && d + 1 < w.size() &&
                                                 is_digit(w[d + 1]))))
      ++d;
    const std::string_view number = w.substr(0, d), suffix = w.substr(d);
    const bool shaped = number.find_first_of(".,-") != std::string_view::npos;  // 2.5, 1,984, 4.4-5.0
    const bool unit = (!suffix.empty() && is_unit(suffix)) || (suffix.empty() && k + 1 < words.size() && is_unit(words[k + 1]));
    if (shaped || unit) ++figures;
  }
  return figures;
}

bool asks_for_quantity(std::string_view question) {
  std::string q(question);
  for (char& c : q) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static constexpr std::array<std::string_view, 22> kCues = {
      "how many", "how much", "how fast", "how long", "how large", "how big", "how quick",
      "how slow", "how often", "latency", "throughput", "speed", "faster", "slower", "benchmark",
      "measured", "percentile", "p99", "p95", "p50", "tokens per second", "per second"};
  return std::any_of(kCues.begin(), kCues.end(), [&](std::string_view cue) { return q.find(cue) != std::string::npos; });
}

std::vector<AnswerSentence> answer_sentences(std::string_view text) {
  const std::vector<Line> lines = classify_lines(text);
  std::vector<AnswerSentence> out;
  std::size_t li = 0;
  for (const auto& [b, e] : split_sentences(text)) {
    while (li + 1 < lines.size() && lines[li].end < b) ++li;  // the line the sentence starts on
    const std::string_view s = text.substr(b, e - b);
    SentenceKind kind = SentenceKind::kProse;
    if (lines[li].code || lines[li].structure || is_fragment(s)) {
      kind = SentenceKind::kStructure;
    } else if (count_figures(s) >= kMeasurementFigures) {
      kind = SentenceKind::kMeasurement;
    }
    out.push_back({b, e, kind});
  }
  return out;
}

}  // namespace sluice::retrieval
