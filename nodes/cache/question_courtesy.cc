#include "nodes/cache/question_courtesy.h"

#include "nodes/cache/courtesy_phrases.h"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <vector>

namespace sluice::cache {
namespace {

using courtesy::Phrase;

struct Word {
  std::string lower;  // lower-cased ASCII, the typographic apostrophe written '
  std::size_t begin = 0, end = 0;
};

bool word_byte(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '\'' || (c & 0x80); }

std::vector<Word> words_of(std::string_view text) {
  std::vector<Word> out;
  std::size_t i = 0;
  while (i < text.size()) {
    if (!word_byte(text[i])) {
      ++i;
      continue;
    }
    Word w;
    w.begin = i;
    while (i < text.size() && word_byte(text[i])) {
      if (text.compare(i, 3, "\xE2\x80\x99") == 0) {  // ’
        w.lower += '\'';
        i += 3;
        continue;
      }
      w.lower += static_cast<char>(std::tolower(static_cast<unsigned char>(text[i])));
      ++i;
    }
    w.end = i;
    out.push_back(std::move(w));
  }
  return out;
}

bool matches_at(const std::vector<Word>& words, std::size_t at, const Phrase& p) {
  if (at + p.size() > words.size()) return false;
  for (std::size_t k = 0; k < p.size(); ++k)
    if (words[at + k].lower != p[k]) return false;
  return true;
}

// Whether the gap between two words closes a clause: one of , ! . : ; ? or a dash standing
// apart ("quick one - how ..."; "hi-res" is one word's hyphen, not a break).
bool clause_break(std::string_view text, std::size_t from, std::size_t to) {
  const std::string_view gap = text.substr(from, to - from);
  if (gap.find_first_of(",!.:;?") != std::string_view::npos) return true;
  const bool dash = gap.find('-') != std::string_view::npos || gap.find("\xE2\x80\x94") != std::string_view::npos ||
                    gap.find("\xE2\x80\x93") != std::string_view::npos;
  return dash && gap.find(' ') != std::string_view::npos;
}

}  // namespace

std::string without_courtesy(std::string_view question) {
  const std::vector<Word> words = words_of(question);
  std::size_t first = 0, last = words.size();  // the question's words: [first, last)

  // Openers, each up to its punctuation ("Thanks so much! One more thing: how ...").
  for (bool again = true; again && first < last;) {
    again = false;
    for (const Phrase& p : courtesy::clause_openers()) {
      if (!matches_at(words, first, p)) continue;
      std::size_t end = first + p.size();  // the clause's last word + 1
      while (end < last && end - first < courtesy::kClauseWords && !clause_break(question, words[end - 1].end, words[end].begin)) ++end;
      if (end >= last || !clause_break(question, words[end - 1].end, words[end].begin)) break;
      bool pleasantry = true;
      for (std::size_t k = first + p.size(); k < end && pleasantry; ++k) pleasantry = courtesy::pleasantry_word(words[k].lower);
      if (!pleasantry) break;
      first = end;
      if (first < last && courtesy::joining_word(words[first].lower)) ++first;
      again = true;
      break;
    }
    if (again) continue;
    for (const Phrase& p : courtesy::openers()) {
      if (!matches_at(words, first, p)) continue;
      std::size_t after = first + p.size();
      if (after >= last) break;
      bool closed = clause_break(question, words[after - 1].end, words[after].begin);
      // A name after a greeting ("Hi Sam, ..."): one capitalised word before the punctuation.
      if (!closed && p.size() <= 2 && after + 1 < last &&
          std::isupper(static_cast<unsigned char>(question[words[after].begin])) &&
          clause_break(question, words[after].end, words[after + 1].begin)) {
        ++after;
        closed = true;
      }
      if (!closed && !(courtesy::bare_greeting(p) && courtesy::starts_question(words[after].lower))) continue;
      first = after;
      again = true;
      break;
    }
  }
  // One request frame.
  bool framed = false;
  for (const Phrase& p : courtesy::frames()) {
    if (matches_at(words, first, p)) {
      first += p.size();
      // A bare "please" leaves an instruction ("Please summarise this."), not a question.
      framed = p.back() != "please" && p.back() != "kindly";
      break;
    }
  }
  // Closers, each after punctuation or a "please" ("..., please?", "... Thanks in advance!").
  for (bool again = true; again && last > first;) {
    again = false;
    for (const Phrase& p : courtesy::closers()) {
      if (p.size() > last - first || !matches_at(words, last - p.size(), p)) continue;
      const std::size_t at = last - p.size();
      if (at == first) continue;
      if (!clause_break(question, words[at - 1].end, words[at].begin) && p[0] != "please") continue;
      last = at;
      again = true;
      break;
    }
  }
  if (last - first < 2 || (first == 0 && last == words.size())) return std::string(question);

  std::string out(question.substr(words[first].begin, words[last - 1].end - words[first].begin));
  // The sentence's closing mark: a '?' anywhere after the last word kept, else '.' or '!'. What
  // a request frame asked for is a question, whatever mark closed the request ("... tell me how
  // to export a report to PDF." scores 0.75 against "How do I export a report to PDF?" with a
  // full stop and 0.95 with a question mark).
  const std::string_view rest = question.substr(words[last - 1].end);
  if (framed || rest.find('?') != std::string_view::npos) {
    out += '?';
  } else if (!rest.empty() && (rest[0] == '.' || rest[0] == '!')) {
    out += rest[0];
  }
  if (std::islower(static_cast<unsigned char>(out[0]))) out[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[0])));
  return out;
}

}  // namespace sluice::cache
