#include "nodes/cache/courtesy_phrases.h"

#include <algorithm>
#include <initializer_list>
#include <string_view>

namespace sluice::cache::courtesy {
namespace {

// Expands a pattern into every word sequence it names: "(a|b c)" is one of its alternatives,
// "[a|b c]" one of them or nothing; groups do not nest.
std::vector<Phrase> expand_phrase_pattern(std::string_view pattern) {
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

std::vector<Phrase> expand_phrase_patterns(std::initializer_list<std::string_view> patterns) {
  std::vector<Phrase> out;
  for (std::string_view p : patterns) {
    std::vector<Phrase> e = expand_phrase_pattern(p);
    out.insert(out.end(), e.begin(), e.end());
  }
  // Longest first, so that "thank you so much" is taken whole rather than as "thank you".
  std::stable_sort(out.begin(), out.end(), [](const Phrase& a, const Phrase& b) { return a.size() > b.size(); });
  return out;
}

}  // namespace

// Greetings and thanks that open a message, each closed by punctuation.
const std::vector<Phrase>& openers() {
  static const std::vector<Phrase> p = expand_phrase_patterns({
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
  static const std::vector<Phrase> p = expand_phrase_patterns({
      "(thanks|thank you|many thanks) for",
      "(hope|i hope) (you|you're|you are|all is|everyone is|this finds you)",
      "(sorry|apologies|i apologise|i apologize) (for|if|about)",
      "(i have|i've got|i got|i have got) (a|one|another) [quick|small|simple|short] question",
      "(quick|simple|small|short) (one|q|question)",
      "please help",
  });
  return p;
}

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
  static const std::vector<Phrase> p = expand_phrase_patterns({
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
  static const std::vector<Phrase> p = expand_phrase_patterns({
      "please",
      "(thanks|thank you|many thanks|cheers|thx|ty) [so much|very much|a lot|in advance|again]",
  });
  return p;
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

}  // namespace sluice::cache::courtesy
