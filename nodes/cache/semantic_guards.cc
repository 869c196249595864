#include "nodes/cache/semantic_guards.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <unordered_map>
#include <unordered_set>

namespace sluice::cache {
namespace {

struct Token {
  std::string raw;    // as written
  std::string lower;  // lower-cased ASCII
  bool sentence_start = false;
  bool quoted = false;
};

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || (c & 0x80); }

// Words: runs of letters and digits, keeping '.', '/', '_', '-', '\'' and ',' between two
// word characters (config.yaml, api/v1, gpt-4, don't, 1,000). Quoted spans mark their words.
std::vector<Token> tokenize(std::string_view text) {
  std::vector<Token> out;
  bool quoted = false, start = true;
  std::size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '"' || c == '`') {
      quoted = !quoted;
      ++i;
      continue;
    }
    if (!word_char(c)) {
      if (c == '.' || c == '?' || c == '!' || c == ':' || c == ';') start = true;
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < text.size()) {
      if (word_char(text[j])) {
        ++j;
      } else if ((text[j] == '.' || text[j] == '/' || text[j] == '_' || text[j] == '-' || text[j] == '\'' ||
                  text[j] == ',') &&
                 j + 1 < text.size() && word_char(text[j + 1])) {
        // A comma joins digits only (1,000), not words ("a,b" is two).
        if (text[j] == ',' && !(std::isdigit(static_cast<unsigned char>(text[j - 1])) &&
                                std::isdigit(static_cast<unsigned char>(text[j + 1])))) {
          break;
        }
        ++j;
      } else {
        break;
      }
    }
    Token t;
    t.raw = std::string(text.substr(i, j - i));
    t.lower = t.raw;
    for (char& ch : t.lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    t.sentence_start = start;
    t.quoted = quoted;
    out.push_back(std::move(t));
    start = false;
    i = j;
  }
  return out;
}

// Inflections of a verb: base, -s, -ed/-d, -ing (dropping a final 'e').
std::vector<std::string> forms(const std::string& base) {
  std::vector<std::string> f{base, base + "s"};
  if (!base.empty() && base.back() == 'e') {
    f.push_back(base + "d");
    f.push_back(base.substr(0, base.size() - 1) + "ing");
  } else {
    f.push_back(base + "ed");
    f.push_back(base + "ing");
    if (!base.empty() && base.back() == 'p') {  // stop -> stopped, stopping; drop -> dropped
      f.push_back(base + "ped");
      f.push_back(base + "ping");
    }
  }
  return f;
}

struct AntonymClass {
  std::vector<std::string> a, b;  // words or two-word phrases; verbs are inflected
};

// The classes of opposites. A word appears in one class only.
const std::vector<AntonymClass>& antonym_classes() {
  static const std::vector<AntonymClass> classes = {
      {{"enable", "activate", "turn on", "switch on", "unmute", "power on"},
       {"disable", "deactivate", "turn off", "switch off", "mute", "power off", "off"}},
      {{"start", "begin", "launch", "resume", "boot"}, {"stop", "halt", "pause", "kill", "terminate", "quit", "shut down"}},
      {{"add", "create", "insert", "install", "attach", "include", "append"},
       {"remove", "delete", "uninstall", "detach", "exclude", "drop", "erase", "purge"}},
      {{"increase", "raise", "grow", "expand", "extend", "speed up", "scale up", "upgrade", "maximize", "maximise", "enlarge"},
       {"decrease", "reduce", "shrink", "slow down", "scale down", "downgrade", "minimize", "minimise", "truncate"}},
      {{"open", "unfold"}, {"close", "shut", "fold"}},
      {{"reveal", "unhide", "expose"}, {"hide", "conceal", "mask"}},
      {{"allow", "permit", "grant", "accept", "approve", "whitelist", "allowlist"},
       {"block", "deny", "forbid", "revoke", "reject", "blacklist", "denylist", "ban"}},
      {{"lock"}, {"unlock"}},
      {{"connect", "subscribe", "mount"}, {"disconnect", "unlink", "unpair", "unsubscribe", "unfollow", "unmount"}},
      {{"upload", "push", "send"}, {"download", "pull", "receive"}},
      {{"import"}, {"export"}},
      {{"encrypt", "encode", "compress", "zip", "serialize", "serialise"},
       {"decrypt", "decode", "decompress", "unzip", "deserialize", "deserialise"}},
      {{"log in", "login", "sign in", "signin", "sign up", "signup", "register"},
       {"log out", "logout", "sign out", "signout", "deregister", "unregister"}},
      {{"before", "earlier", "prior"}, {"after", "later"}},
      {{"minimum", "min", "smallest", "lowest", "oldest", "earliest"},
       {"maximum", "max", "largest", "highest", "newest", "latest"}},
      {{"input", "inbound", "incoming", "ingress", "read"}, {"output", "outbound", "outgoing", "egress", "write"}},
      {{"buy", "purchase", "borrow"}, {"sell", "refund", "lend"}},
      {{"true", "valid", "correct"}, {"false", "invalid", "incorrect", "wrong"}},
      {{"succeed", "success", "successful"}, {"fail", "failure", "crash", "broken"}},
      {{"encrypted", "public"}, {"unencrypted", "private"}},
      {{"enter"}, {"exit"}},
      {{"merge", "combine"}, {"split", "separate", "divide"}},
      {{"inside", "internal", "within"}, {"outside", "external"}},
      {{"above"}, {"below"}},
      {{"online"}, {"offline"}},
      {{"sync", "synchronous", "synchronously"}, {"async", "asynchronous", "asynchronously"}},
      {{"horizontal", "horizontally"}, {"vertical", "vertically"}},
      {{"left"}, {"right"}},
  };
  return classes;
}

struct PolarIndex {
  std::unordered_map<std::string, std::pair<int, int>> words;    // single words
  std::unordered_map<std::string, std::pair<int, int>> phrases;  // "w1 w2"
};

const PolarIndex& polar_index() {
  static const PolarIndex index = [] {
    PolarIndex ix;
    const auto& classes = antonym_classes();
    for (int c = 0; c < static_cast<int>(classes.size()); ++c) {
      for (int side = 0; side < 2; ++side) {
        for (const std::string& w : side == 0 ? classes[c].a : classes[c].b) {
          const auto space = w.find(' ');
          if (space == std::string::npos) {
            for (const auto& f : forms(w)) ix.words.emplace(f, std::make_pair(c, side));
          } else {
            const std::string verb = w.substr(0, space), rest = w.substr(space);
            for (const auto& f : forms(verb)) ix.phrases.emplace(f + rest, std::make_pair(c, side));
            ix.phrases.emplace(verb == "shut" ? "shutting" + rest : verb + rest, std::make_pair(c, side));
          }
        }
      }
    }
    // Irregular forms the rule above misses.
    for (const auto& [irregular, base] : {std::pair<const char*, const char*>{"began", "begin"}, {"sent", "send"},
                                          {"grew", "grow"}, {"grown", "grow"}, {"wrote", "write"}, {"written", "write"}}) {
      ix.words.emplace(irregular, ix.words.at(base));
    }
    return ix;
  }();
  return index;
}

const std::unordered_set<std::string>& negation_cues() {
  static const std::unordered_set<std::string> cues = {
      "not", "no", "never", "without", "cannot", "can't", "cant", "none", "nobody", "nothing", "neither",
      "nor", "nowhere", "don't", "dont", "doesn't", "doesnt", "didn't", "didnt", "isn't", "isnt", "aren't",
      "arent", "wasn't", "wasnt", "weren't", "werent", "won't", "wont", "wouldn't", "wouldnt", "shouldn't",
      "shouldnt", "couldn't", "couldnt", "haven't", "havent", "hasn't", "hasnt", "hadn't", "hadnt", "mustn't",
      "needn't"};
  return cues;
}

const std::unordered_map<std::string, std::string>& number_words() {
  static const std::unordered_map<std::string, std::string> words = {
      {"zero", "0"},        {"two", "2"},        {"three", "3"},    {"four", "4"},
      {"five", "5"},     {"six", "6"},        {"seven", "7"},      {"eight", "8"},    {"nine", "9"},
      {"ten", "10"},     {"eleven", "11"},    {"twelve", "12"},    {"thirteen", "13"}, {"fourteen", "14"},
      {"fifteen", "15"}, {"sixteen", "16"},   {"seventeen", "17"}, {"eighteen", "18"}, {"nineteen", "19"},
      {"twenty", "20"},  {"thirty", "30"},    {"forty", "40"},     {"fifty", "50"},   {"sixty", "60"},
      {"seventy", "70"}, {"eighty", "80"},    {"ninety", "90"},    {"hundred", "100"}, {"thousand", "1000"},
      {"million", "1000000"}, {"billion", "1000000000"}, {"dozen", "12"}, {"half", "0.5"}, {"twice", "2x"},
      {"double", "2x"}, {"triple", "3x"}, {"once", "1x"}, {"third", "3rd"},
      {"fourth", "4th"}, {"fifth", "5th"},};
  return words;
}

const std::unordered_set<std::string>& units() {
  static const std::unordered_set<std::string> u = {
      "b", "kb", "mb", "gb", "tb", "pb", "kib", "mib", "gib", "tib", "byte", "bytes", "bit", "bits", "ms", "s", "sec",
      "secs", "second", "seconds", "min", "mins", "minute", "minutes", "h", "hr", "hrs", "hour", "hours", "day", "days",
      "week", "weeks", "month", "months", "year", "years", "%", "percent", "px", "pt", "em", "rem", "mm", "cm", "m",
      "km", "in", "inch", "inches", "ft", "feet", "mi", "miles", "g", "kg", "lb", "lbs", "oz", "l", "ml", "hz",
      "khz", "mhz", "ghz", "w", "kw", "v", "mah", "dpi", "fps", "rpm", "usd", "eur", "gbp", "dollars", "euros", "x",
      "times", "users", "requests", "tokens", "cores", "threads", "gpus", "cpus", "items", "rows", "columns"};
  return u;
}

const std::unordered_set<std::string>& date_words() {
  static const std::unordered_set<std::string> d = {
      "january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november",
      "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "monday",
      "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "weekend", "weekday", "weekdays",
      "today", "tonight", "yesterday", "tomorrow", "q1", "q2", "q3", "q4", "morning", "afternoon", "evening",
      "night", "daily", "weekly", "monthly", "yearly", "annually", "quarterly", "hourly", "spring", "summer",
      "autumn", "fall", "winter", "christmas", "holiday", "holidays", "now", "currently", "past", "future"};
  return d;
}

const std::unordered_set<std::string>& period_words() {
  static const std::unordered_set<std::string> p = {"week", "month", "year", "quarter", "day", "night", "time", "release", "version"};
  return p;
}

const std::unordered_set<std::string>& comparative_words() {
  static const std::unordered_set<std::string> c = {
      "more", "less", "fewer", "most", "least", "better", "worse", "best", "worst", "faster", "slower", "fastest",
      "slowest", "cheaper", "cheapest", "costlier", "pricier", "bigger", "biggest", "smaller", "larger", "higher",
      "greater", "greatest", "longer", "longest", "shorter", "shortest", "newer", "older", "easier", "easiest",
      "harder", "hardest", "safer", "safest", "riskier", "simpler", "simplest", "heavier", "lighter", "stronger",
      "weaker", "quicker", "quickest", "cheaply", "expensive", "cheap", "fast", "slow", "quick", "quickly", "slowly",
      "hot", "cold", "warmer", "cooler", "hotter", "colder", "deeper", "wider", "narrower", "louder", "quieter"};
  return c;
}

bool has_digit(const std::string& s) {
  return std::any_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}
bool has_alpha(const std::string& s) {
  return std::any_of(s.begin(), s.end(), [](char c) { return std::isalpha(static_cast<unsigned char>(c)); });
}

// Digits with commas dropped, a leading number and the letters after it split ("5gb" -> 5, gb).
std::string strip_commas(std::string s) {
  s.erase(std::remove(s.begin(), s.end(), ','), s.end());
  return s;
}

bool is_entity(const Token& t) {
  if (t.quoted) return true;
  const std::string& r = t.raw;
  // A number with its unit (5GB, 10ms) is the number guard's.
  if (std::isdigit(static_cast<unsigned char>(r[0])) || units().count(t.lower)) return false;
  if (has_digit(r) && has_alpha(r)) return true;
  if (r.find_first_of("./_") != std::string::npos && has_alpha(r)) return true;
  int upper = 0, lower = 0;
  for (std::size_t i = 0; i < r.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(r[i]);
    if (std::isupper(c)) {
      ++upper;
      if (i > 0) return true;  // inner capital: iPhone, ModelY, macOS
    } else if (std::islower(c)) {
      ++lower;
    }
  }
  if (upper >= 2 && lower == 0) return true;                               // AWS, GPU
  if (upper == 1 && std::isupper(static_cast<unsigned char>(r[0])) && !t.sentence_start && r != "I") return true;  // Windows
  return false;
}

template <class T>
void sort_unique(std::vector<T>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

}  // namespace

const char* guard_name(Guard guard) {
  switch (guard) {
    case Guard::kNegation: return "negation";
    case Guard::kAntonym: return "antonym";
    case Guard::kNumber: return "number";
    case Guard::kDate: return "date";
    case Guard::kEntity: return "entity";
    case Guard::kComparative: return "comparative";
  }
  return "?";
}

QuestionFeatures question_features(std::string_view question) {
  QuestionFeatures f;
  const std::vector<Token> tokens = tokenize(question);
  const PolarIndex& polar = polar_index();
  int negations = 0;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const Token& t = tokens[i];
    const std::string& w = t.lower;
    f.words.push_back(w);
    if (negation_cues().count(w) || (w.size() > 3 && w.compare(w.size() - 3, 3, "n't") == 0)) ++negations;
    // Antonyms: a two-word phrase first ("turn on"), then the word alone.
    if (i + 1 < tokens.size()) {
      auto p = polar.phrases.find(w + " " + tokens[i + 1].lower);
      if (p != polar.phrases.end()) {
        f.polar.push_back(p->second);
        ++i;
        f.words.push_back(tokens[i].lower);
        continue;
      }
    }
    if (auto p = polar.words.find(w); p != polar.words.end()) f.polar.push_back(p->second);
    // Numbers, with the unit that follows them (in the same word or the next).
    if (has_digit(w)) {
      std::string n = strip_commas(w);
      const bool leading_digit = std::isdigit(static_cast<unsigned char>(n[0])) || n[0] == '.';
      if (leading_digit) {
        if (!has_alpha(n) && i + 1 < tokens.size() && units().count(tokens[i + 1].lower)) n += tokens[i + 1].lower;
        f.numbers.push_back(n);
      } else {
        f.numbers.push_back(n);  // v2, gpt-4: the entity guard sees them too
      }
      if (n.size() == 4 && (n.rfind("19", 0) == 0 || n.rfind("20", 0) == 0) && !has_alpha(n)) f.dates.push_back(n);
    } else if (auto nw = number_words().find(w); nw != number_words().end()) {
      std::string n = nw->second;
      if (i + 1 < tokens.size() && units().count(tokens[i + 1].lower)) n += tokens[i + 1].lower;
      f.numbers.push_back(n);
    }
    // Rates: "per second" and "per minute" differ as much as 10 and 100 do.
    if ((w == "per" || w == "every" || w == "each") && i + 1 < tokens.size() && units().count(tokens[i + 1].lower)) {
      f.numbers.push_back("per " + tokens[i + 1].lower);
    }
    // Dates: names, relative days, and "last/next/this <period>".
    if (date_words().count(w)) f.dates.push_back(w);
    if ((w == "last" || w == "next" || w == "this" || w == "previous" || w == "coming") && i + 1 < tokens.size() &&
        period_words().count(tokens[i + 1].lower)) {
      f.dates.push_back(w + " " + tokens[i + 1].lower);
    }
    if (comparative_words().count(w)) f.comparatives.push_back(w);
    if (is_entity(t)) f.entities.push_back(w);
  }
  f.negated = negations % 2 == 1;
  sort_unique(f.polar);
  std::sort(f.numbers.begin(), f.numbers.end());
  sort_unique(f.dates);
  sort_unique(f.entities);
  sort_unique(f.words);
  sort_unique(f.comparatives);
  return f;
}

std::optional<Guard> guard_mismatch(const QuestionFeatures& a, const QuestionFeatures& b) {
  if (a.negated != b.negated) return Guard::kNegation;
  if (a.polar != b.polar) return Guard::kAntonym;
  if (a.numbers != b.numbers) return Guard::kNumber;
  if (a.dates != b.dates) return Guard::kDate;
  // An entity must appear among the other question's words (capitalisation aside).
  auto covered = [](const std::vector<std::string>& entities, const std::vector<std::string>& words) {
    return std::all_of(entities.begin(), entities.end(),
                       [&](const std::string& e) { return std::binary_search(words.begin(), words.end(), e); });
  };
  if (!covered(a.entities, b.words) || !covered(b.entities, a.words)) return Guard::kEntity;
  if (a.comparatives != b.comparatives) return Guard::kComparative;
  return std::nullopt;
}

}  // namespace sluice::cache
