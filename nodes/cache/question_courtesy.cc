#include "nodes/cache/question_courtesy.h"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <vector>

namespace sluice::cache {
namespace {

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

using Phrase = std::vector<std::string>;

// Expands a pattern into every word sequence it names: "(a|b c)" is one of its alternatives,
// "[a|b c]" one of them or nothing; groups do not nest.
std::vector<Phrase> expand(std::string_view pattern) {
  std::vector<Phrase> out{{}};
  std::size_t i = 0;
  while (i < pattern.size()) {
    if (pattern[i] == ' ') {
      ++i;
      continue;
    }
    std::vector<Phrase> choices;
    if (pattern[i] == '(' || pattern[i] == '[') {
      const char close = pattern[i] == '(' ? ')' : ']';
      const std::size_t end = pattern.find(close, i);
      std::string_view inside = pattern.substr(i + 1, end - i - 1);
      if (close == ']') choices.push_back({});
      std::size_t a = 0;
      while (a <= inside.size()) {
        std::size_t bar = inside.find('|', a);
        if (bar == std::string_view::npos) bar = inside.size();
        Phrase p;
        std::size_t k = a;
        while (k < bar) {
          const std::size_t space = std::min(inside.find(' ', k), bar);
          if (space > k) p.emplace_back(inside.substr(k, space - k));
          k = space + 1;
        }
        choices.push_back(std::move(p));
        a = bar + 1;
      }
      i = end + 1;
    } else {
      const std::size_t space = std::min(pattern.find(' ', i), pattern.size());
      choices.push_back({std::string(pattern.substr(i, space - i))});
      i = space;
    }
    std::vector<Phrase> next;
    for (const Phrase& head : out)
      for (const Phrase& tail : choices) {
        Phrase p = head;
        p.insert(p.end(), tail.begin(), tail.end());
        next.push_back(std::move(p));
      }
    out = std::move(next);
  }
  return out;
}

std::vector<Phrase> expand_all(std::initializer_list<std::string_view> patterns) {
  std::vector<Phrase> out;
  for (std::string_view p : patterns) {
    std::vector<Phrase> e = expand(p);
    out.insert(out.end(), e.begin(), e.end());
  }
  // Longest first, so that "thank you so much" is taken whole rather than as "thank you".
  std::stable_sort(out.begin(), out.end(), [](const Phrase& a, const Phrase& b) { return a.size() > b.size(); });
  return out;
}

// Greetings and thanks that open a message, each closed by punctuation.
const std::vector<Phrase>& openers() {
  static const std::vector<Phrase> p = expand_all({
      "(hi|hello|hey|hiya|howdy|greetings) [there|team|all|everyone|folks|guys]",
      "good (morning|afternoon|evening|day) [there|team|all|everyone]",
      "dear (team|support|sir|madam|all|sir or madam)",
      "(thanks|thank you|many thanks|cheers) [so much|very much|a lot|in advance|again]",
      "(one more thing|quick question|a quick question|another question|one more question|question)",
      "(sorry|sorry to bother you|apologies|excuse me)",
  });
  return p;
}

// Pleasantries that open a clause of their own ("Thanks for the quick reply!", "Hope you're
// well,", "Sorry for the basic question, but ..."): the clause up to its punctuation comes off
// when it ends within kClauseWords words and every word after the opening phrase is one of
// pleasantry_words(), so that a clause that names a subject ("Quick question about Redis:")
// stays: the question after it may lean on that subject ("how do I enable it?").
const std::vector<Phrase>& clause_openers() {
  static const std::vector<Phrase> p = expand_all({
      "(thanks|thank you|many thanks) for",
      "(hope|i hope) (you|you're|you are|all is|everyone is|this finds you)",
      "(sorry|apologies|i apologise|i apologize) (for|if|about)",
      "(i have|i've got|i got|i have got) (a|one|another) [quick|small|simple|short] question",
      "(quick|simple|small|short) (one|q|question)",
      "please help",
  });
  return p;
}
constexpr std::size_t kClauseWords = 8;

bool pleasantry_word(const std::string& w) {
  static const char* const words[] = {
      "the", "a", "an", "this", "that", "it", "my", "your", "you", "you're", "are", "is", "all", "everyone", "well",
      "doing", "good", "great", "fine", "finds", "quick", "fast", "prompt", "kind", "earlier", "last", "basic",
      "simple", "silly", "dumb", "stupid", "newbie", "naive", "late", "long", "reply", "response", "answer", "answers",
      "help", "support", "time", "trouble", "inconvenience", "delay", "question", "questions", "bothering", "asking",
      "again", "so", "much", "very", "in", "advance", "one", "q", "another", "small", "short", "me", "bother",
      "disturbing", "here", "today", "ok", "okay", "and", "of", "for", "have", "being", "as", "always"};
  for (const char* s : words)
    if (w == s) return true;
  return false;
}

// Words that join a stripped opener to the question ("Sorry for the basic question, but how ...").
bool joining_word(const std::string& w) { return w == "but" || w == "so" || w == "anyway" || w == "and"; }

// Openers that may run straight into the question ("Hi how do I ...", see starts_question).
bool bare_greeting(const Phrase& p) { return p.size() == 1 && (p[0] == "hi" || p[0] == "hello" || p[0] == "hey"); }

// Requests wrapped around a question; what follows the frame is the question.
const std::vector<Phrase>& frames() {
  static const std::vector<Phrase> p = expand_all({
      "[please|kindly] (could|can|would|will) you [please|kindly] (tell me|let me know|explain|explain to me|"
      "advise|advise me|advise me on|advise on|show me|help me|help me with|help me understand|help me figure out)",
      "[please|kindly] (could|can) (someone|anyone|somebody) [please] (tell me|let me know|explain|explain to me|help me)",
      "would you mind (telling me|explaining|explaining to me|letting me know|showing me|helping me)",
      "would it be possible [for you] to (tell me|explain|explain to me|let me know|show me)",
      "is it possible [for you] to (tell me|explain|explain to me|let me know)",
      "(i'd|i would) (like|love|want) to (know|ask|understand|find out)",
      "(i'd|i would) (appreciate it|be grateful|be thankful) if you could (tell me|explain|explain to me|"
      "let me know|advise|advise me on|advise on|show me|help me)",
      "i (need|want|wanted) to know",
      "(i'm|i am|im) (wondering|curious) [if you could tell me|if you know]",
      "i was wondering [if you could tell me|if you know]",
      "i wonder",
      "(do you|does anyone|does anybody) [happen to] know",
      "(please|kindly) (tell me|let me know|explain|advise|advise me|advise me on|advise on|show me|help me)",
      "(please|kindly)",
  });
  return p;
}

// Courtesy that closes a message.
const std::vector<Phrase>& closers() {
  static const std::vector<Phrase> p = expand_all({
      "please",
      "(thanks|thank you|many thanks|cheers|thx|ty) [so much|very much|a lot|in advance|again]",
  });
  return p;
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

// Words a question starts with: a bare greeting ("Hey how do I ...") counts only before one,
// so that "Hello world in C" keeps its first word.
bool starts_question(const std::string& w) {
  static const char* const starts[] = {"how", "what", "why", "when", "where", "who", "which", "can", "could",
                                       "is", "are", "do", "does", "i", "i'm", "would", "will", "should"};
  for (const char* s : starts)
    if (w == s) return true;
  return false;
}

}  // namespace

std::string without_courtesy(std::string_view question) {
  const std::vector<Word> words = words_of(question);
  std::size_t first = 0, last = words.size();  // the question's words: [first, last)

  // Openers, each up to its punctuation ("Thanks so much! One more thing: how ...").
  for (bool again = true; again && first < last;) {
    again = false;
    for (const Phrase& p : clause_openers()) {
      if (!matches_at(words, first, p)) continue;
      std::size_t end = first + p.size();  // the clause's last word + 1
      while (end < last && end - first < kClauseWords && !clause_break(question, words[end - 1].end, words[end].begin)) ++end;
      if (end >= last || !clause_break(question, words[end - 1].end, words[end].begin)) break;
      bool pleasantry = true;
      for (std::size_t k = first + p.size(); k < end && pleasantry; ++k) pleasantry = pleasantry_word(words[k].lower);
      if (!pleasantry) break;
      first = end;
      if (first < last && joining_word(words[first].lower)) ++first;
      again = true;
      break;
    }
    if (again) continue;
    for (const Phrase& p : openers()) {
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
      if (!closed && !(bare_greeting(p) && starts_question(words[after].lower))) continue;
      first = after;
      again = true;
      break;
    }
  }
  // One request frame.
  bool framed = false;
  for (const Phrase& p : frames()) {
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
    for (const Phrase& p : closers()) {
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
