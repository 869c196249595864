#include "nodes/retrieval/fusion/query_classifier.h"

#include <cctype>
#include <string>
#include <vector>

namespace sluice::retrieval {
namespace {

bool is_alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

bool is_question_word(std::string w) {
  for (auto& c : w) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static const char* const kWords[] = {"what", "why", "how", "when", "where", "which", "who",
                                       "whom", "whose", "does", "do", "is", "are", "can",
                                       "could", "should", "explain", "describe"};
  for (const char* q : kWords) {
    if (w == q) return true;
  }
  return false;
}

}  // namespace

const char* query_type_name(QueryType t) {
  return t == QueryType::kExactLookup ? "exact_lookup" : "natural_language";
}

QueryType classify_query(std::string_view q) {
  for (char quote : {'"', '\''}) {
    const auto a = q.find(quote);
    // An apostrophe inside a word (don't) is not a quote: require a word boundary before it.
    if (a != std::string_view::npos && (a == 0 || !is_alnum(q[a - 1])) &&
        q.find(quote, a + 1) != std::string_view::npos) {
      return QueryType::kExactLookup;
    }
  }
  // Whitespace-separated tokens, trailing sentence punctuation stripped.
  std::vector<std::string> tokens;
  std::string cur;
  for (char c : q) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!cur.empty()) tokens.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  if (!cur.empty()) tokens.push_back(cur);
  bool question = false;
  std::size_t words = 0;
  for (auto t : tokens) {
    while (!t.empty() && std::string("?!.,;:").find(t.back()) != std::string::npos) t.pop_back();
    if (t.empty()) continue;
    ++words;
    question |= is_question_word(t);
    std::size_t letters = 0, digits = 0, upper = 0;
    bool inner_mark = false, lower_then_upper = false;
    for (std::size_t i = 0; i < t.size(); ++i) {
      const auto c = static_cast<unsigned char>(t[i]);
      letters += std::isalpha(c) != 0;
      digits += std::isdigit(c) != 0;
      upper += std::isupper(c) != 0;
      if (i > 0 && i + 1 < t.size() && is_alnum(t[i - 1]) && is_alnum(t[i + 1]) &&
          (c == '_' || c == '/' || c == '.' || c == ':' || c == '-')) {
        // "i.e." and "e.g." are prose: a dot counts only between runs of 2+ characters.
        const bool dotted_word = c == '.' && (i < 2 || !is_alnum(t[i - 2]) || i + 2 >= t.size() || !is_alnum(t[i + 2]));
        if (!dotted_word) inner_mark |= c != '-' || digits > 0 || std::isdigit(static_cast<unsigned char>(t[i + 1]));
      }
      if (i > 0 && std::isupper(c) && std::islower(static_cast<unsigned char>(t[i - 1]))) lower_then_upper = true;
    }
    if (t.find("::") != std::string::npos) inner_mark = true;
    if ((letters > 0 && digits > 0) || inner_mark || lower_then_upper) return QueryType::kExactLookup;
    if (letters >= 2 && upper == letters) return QueryType::kExactLookup;
    if (letters == 0 && digits >= 3) return QueryType::kExactLookup;
  }
  if (words <= 2 && !question) return QueryType::kExactLookup;
  return QueryType::kNaturalLanguage;
}

}  // namespace sluice::retrieval
