#include "nodes/cache/semantic_guards.h"

#include "nodes/retrieval/text/analyzer.h"

#include <algorithm>
#include <cctype>
#include <iterator>
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
  bool setting_value = false;  // right after "name:" (invalidate: cited): a value, compared like a name
};

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || (c & 0x80); }

// Words: runs of letters and digits, keeping '.', '/', '_', '-', '\'' and ',' between two
// word characters (config.yaml, api/v1, gpt-4, don't, 1,000). Quoted spans mark their words;
// so does "name:" the word after it (a setting's value).
std::vector<Token> tokenize(std::string_view text) {
  std::vector<Token> out;
  bool quoted = false, start = true;
  bool value_next = false;  // a "name:" was just read (not the text's first word: "Error: ...")
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
      if (c == ':') value_next = out.size() >= 2 && i > 0 && word_char(text[i - 1]);
      else if (c != ' ') value_next = false;
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
    t.setting_value = value_next;
    out.push_back(std::move(t));
    start = false;
    value_next = false;
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
      {{"reveal", "unhide", "expose", "show", "display"}, {"hide", "conceal", "mask"}},
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
      {{"minimum", "min", "smallest", "lowest", "oldest", "earliest", "first"},
       {"maximum", "max", "largest", "highest", "newest", "latest", "last"}},
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
      {{"fast", "quick", "quickly", "rapid"}, {"slow", "slowly"}},
      {{"cheap", "inexpensive"}, {"expensive", "costly", "pricey"}},
      {{"hot", "warm"}, {"cold", "cool"}},
      {{"sync", "synchronous", "synchronously"}, {"async", "asynchronous", "asynchronously"}},
      {{"horizontal", "horizontally"}, {"vertical", "vertically"}},
      {{"ascending", "asc"}, {"descending", "desc"}},
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
      {"double", "2x"}, {"triple", "3x"}, {"once", "1x"}, {"first", "1st"}, {"third", "3rd"},
      {"fourth", "4th"}, {"fifth", "5th"}, {"sixth", "6th"}, {"seventh", "7th"}, {"eighth", "8th"},
      {"ninth", "9th"}, {"tenth", "10th"}};
  return words;
}

const std::unordered_set<std::string>& date_words() {
  static const std::unordered_set<std::string> d = {
      "january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november",
      "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "monday",
      "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "weekend", "weekday", "weekdays",
      "today", "tonight", "yesterday", "tomorrow", "q1", "q2", "q3", "q4", "morning", "afternoon", "evening",
      "night", "spring", "summer", "autumn", "fall", "winter", "christmas", "holiday", "holidays"};
  return d;
}

const std::unordered_set<std::string>& period_words() {
  static const std::unordered_set<std::string> p = {"week", "month", "year", "quarter", "day", "night", "time", "release", "version",
                                                    "sprint", "season", "semester", "term", "shift", "cycle", "period", "weekend"};
  return p;
}

// Comparatives and superlatives, each mapped to one spelling so synonyms agree
// ("quickest" = "fastest", "additional" = "more", "ideal" = "best").
const std::unordered_map<std::string, std::string>& comparative_words() {
  static const std::unordered_map<std::string, std::string> c = [] {
    std::unordered_map<std::string, std::string> m;
    for (const char* w : {"more", "less", "fewer", "most", "least", "better", "worse", "best", "worst", "faster", "slower",
                          "fastest", "slowest", "cheaper", "cheapest", "bigger", "biggest", "smaller", "smallest",
                          "larger", "higher", "greater", "greatest", "longer", "longest", "shorter", "shortest", "newer",
                          "older", "easier", "easiest", "harder", "hardest", "safer", "safest", "riskier", "riskiest",
                          "simpler", "simplest", "heavier", "lighter", "stronger", "weaker", "warmer", "cooler",
                          "hotter", "colder", "deeper", "wider", "narrower", "louder", "quieter", "lower", "lowest"}) {
      m.emplace(w, w);
    }
    for (const auto& [w, same] : {std::pair<const char*, const char*>{"quicker", "faster"}, {"quickest", "fastest"},
                                  {"additional", "more"}, {"extra", "more"}, {"ideal", "best"}, {"optimal", "best"},
                                  {"costlier", "more expensive"}, {"pricier", "more expensive"}, {"bigger", "larger"},
                                  {"biggest", "largest"}, {"greater", "larger"}}) {
      m[w] = same;
    }
    return m;
  }();
  return c;
}

// A plural's singular by its last 's' ("users" = "user"; "gpus" = "gpu"; "bus" stays).
std::string without_plural_s(const std::string& word) {
  if (word.size() > 3 && word.back() == 's' && word[word.size() - 2] != 's') return word.substr(0, word.size() - 1);
  return word;
}

// Units: every word a number's unit may be, mapped to one spelling ("mins" = "minute", "GiB"
// stays apart from "GB"); the rest of the units by their singular. The one table of units.
const std::unordered_map<std::string, std::string>& unit_spellings() {
  static const std::unordered_map<std::string, std::string> u = [] {
    std::unordered_map<std::string, std::string> m = {
      {"s", "second"}, {"sec", "second"}, {"secs", "second"}, {"seconds", "second"}, {"min", "minute"},
      {"mins", "minute"}, {"minutes", "minute"}, {"h", "hour"}, {"hr", "hour"}, {"hrs", "hour"}, {"hours", "hour"},
      {"days", "day"}, {"weeks", "week"}, {"months", "month"}, {"years", "year"}, {"yrs", "year"}, {"%", "percent"},
      {"bytes", "byte"}, {"bits", "bit"}, {"inches", "inch"}, {"in", "inch"}, {"ft", "foot"}, {"feet", "foot"},
      {"mi", "mile"}, {"miles", "mile"}, {"lb", "pound"}, {"lbs", "pound"}, {"pounds", "pound"}, {"oz", "ounce"},
      {"ounces", "ounce"}, {"l", "liter"}, {"liters", "liter"}, {"litres", "liter"}, {"litre", "liter"},
      {"ml", "milliliter"}, {"kg", "kilogram"}, {"kilograms", "kilogram"}, {"kilos", "kilogram"}, {"g", "gram"},
      {"grams", "gram"}, {"km", "kilometer"}, {"kilometers", "kilometer"}, {"kilometres", "kilometer"},
      {"m", "meter"}, {"meters", "meter"}, {"metres", "meter"}, {"cm", "centimeter"}, {"mm", "millimeter"},
      {"dollars", "usd"}, {"dollar", "usd"}, {"euros", "eur"}, {"euro", "eur"}, {"x", "times"}};
    for (const char* w : {
      "b", "kb", "mb", "gb", "tb", "pb", "kib", "mib", "gib", "tib", "byte", "bytes", "bit", "bits", "ms", "s", "sec",
      "secs", "second", "seconds", "min", "mins", "minute", "minutes", "h", "hr", "hrs", "hour", "hours", "day", "days",
      "week", "weeks", "month", "months", "year", "years", "quarter", "night", "%", "percent", "px", "pt", "em", "rem", "mm", "cm", "m",
      "km", "in", "inch", "inches", "ft", "feet", "mi", "miles", "g", "kg", "lb", "lbs", "oz", "l", "ml", "hz",
      "khz", "mhz", "ghz", "w", "kw", "v", "mah", "dpi", "fps", "rpm", "am", "pm", "usd", "eur", "gbp", "dollars", "euros", "x",
      "times", "users", "requests", "tokens", "cores", "threads", "gpus", "cpus", "items", "rows", "columns"}) {
      m.emplace(w, without_plural_s(w));  // keeps a spelling the pairs above already gave
    }
    return m;
  }();
  return u;
}

// Words after a number that are not its unit ("5 of them", "3 and 4", "2 to 3").
const std::unordered_set<std::string>& not_units() {
  static const std::unordered_set<std::string> w = {"of", "a", "an", "the", "and", "or", "to", "for", "on", "at", "by",
                                                    "with", "from", "is", "are", "was", "in", "per", "more", "less",
                                                    "than", "times", "if", "as"};
  return w;
}

// A number's unit as one spelling: the table's, else the word without a plural 's'.
std::string unit_spelling(const std::string& word) {
  if (auto u = unit_spellings().find(word); u != unit_spellings().end()) return u->second;
  return without_plural_s(word);
}

// Words that carry no topic: function words, question words, politeness, light verbs.
const std::unordered_set<std::string>& function_words() {
  static const std::unordered_set<std::string> w = {
      "a", "an", "the", "i", "me", "my", "mine", "we", "us", "our", "you", "your", "it", "its", "it's", "they", "them",
      "their", "is", "are", "was", "were", "be", "been", "being", "am", "do", "does", "did", "done", "can", "could",
      "would", "should", "will", "shall", "may", "might", "must", "have", "has", "had", "how", "what", "which",
      "who", "whom", "whose", "when", "where", "why", "there", "here", "this", "that", "these", "those", "to", "of",
      "in", "on", "at", "for", "from", "by", "with", "as", "and", "or", "if", "so", "into", "onto", "about", "any",
      "some", "all", "each", "every", "please", "hi", "hello", "hey", "thanks", "thank", "just", "quick",
      "question", "way", "get", "got", "make", "use", "using", "i'm", "im", "i'd", "i've", "i'll", "what's",
      "how's", "let", "me", "tell", "know", "need", "want", "like", "able", "possible", "there's", "someone",
      "something", "anyone", "anything", "also", "still", "then", "than", "up", "out", "ca", "wo", "sure", "kindly",
      "wondering", "ask", "explain", "good", "morning", "afternoon", "evening", "help", "step", "steps",
      "per", "one"};
  return w;
}

// Common synonyms of help-desk questions, each folded to one word for the topic guard (a
// swap between two of them is a rewording, not a new topic).
const std::unordered_map<std::string, std::string>& topic_synonyms() {
  static const std::unordered_map<std::string, std::string> m = [] {
    std::unordered_map<std::string, std::string> out;
    const std::vector<std::vector<std::string>> groups = {
        {"remove", "delete", "erase"},       {"change", "modify", "alter", "edit", "update"},
        {"fix", "resolve", "solve", "repair"}, {"show", "display", "view", "see", "list"},
        {"stop", "halt", "end"},              {"add", "attach", "insert"},
        {"check", "verify", "confirm"},       {"cost", "price", "charge", "fee"},
        {"buy", "purchase"},                  {"create", "make", "generate", "new"},
        {"begin", "start"},                   {"find", "locate", "search"},
        {"symptom", "sign"},                  {"requirement", "prerequisite"},
        {"error", "issue", "problem"},        {"eat", "consume"},
        {"set", "configure", "setup"},        {"app", "application"},
        {"repo", "repository"},               {"doc", "documentation", "docs"},
        {"dict", "dictionary"},               {"pic", "picture", "photo", "image"},
        {"pc", "computer"},                   {"permission", "right", "access"},
        {"fetch", "retrieve", "obtain"},      {"support", "handle"}};
    for (const auto& g : groups) {
      for (const auto& w : g) out.emplace(w, g.front());
    }
    return out;
  }();
  return m;
}

// Edits between two words, a swap of two neighbouring letters counting one (optimal string
// alignment): the most common typo ("chnage") is one edit, not two.
std::size_t typo_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> before(b.size() + 1), row(b.size() + 1), next(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    next[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      next[j] = std::min({row[j] + 1, next[j - 1] + 1, row[j - 1] + (a[i - 1] != b[j - 1])});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) next[j] = std::min(next[j], before[j - 2] + 1);
    }
    std::swap(before, row);
    std::swap(row, next);
  }
  return row[b.size()];
}

// Whether two word sets differ by exactly one word each, one edit apart (two in words of eight
// letters or more): stricter than the folded comparison, since it overrides a synonym's fold
// ("access" and "assess" are two edits apart and two words).
bool one_typo_apart(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::vector<std::string> only_a, only_b;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(only_a));
  std::set_difference(b.begin(), b.end(), a.begin(), a.end(), std::back_inserter(only_b));
  if (only_a.size() != 1 || only_b.size() != 1) return false;
  const std::size_t longest = std::max(only_a[0].size(), only_b[0].size());
  return typo_distance(only_a[0], only_b[0]) <= (longest >= 8 ? 2u : 1u);
}

// Adverbs of rate, as the "per <unit>" they mean.
const std::unordered_map<std::string, std::string>& rate_adverbs() {
  static const std::unordered_map<std::string, std::string> r = {
      {"hourly", "per hour"}, {"daily", "per day"}, {"nightly", "per night"}, {"weekly", "per week"},
      {"monthly", "per month"}, {"quarterly", "per quarter"}, {"yearly", "per year"}, {"annually", "per year"}};
  return r;
}

// Politeness and hedging that carry a negation without negating the question.
const std::vector<std::vector<std::string>>& polite_formulas() {
  static const std::vector<std::vector<std::string>> f = {
      {"if", "it's", "not", "too", "much", "trouble"}, {"if", "its", "not", "too", "much", "trouble"},
      {"if", "you", "don't", "mind"},  {"if", "you", "dont", "mind"},   {"i", "don't", "know"},
      {"i", "dont", "know"},           {"i'm", "not", "sure"},          {"im", "not", "sure"},
      {"not", "sure"},                 {"no", "worries"}};
  return f;
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
  if (t.quoted || t.setting_value) return true;
  const std::string& r = t.raw;
  // A number with its unit (5GB, 10ms) is the number guard's.
  if (std::isdigit(static_cast<unsigned char>(r[0])) || unit_spellings().count(t.lower)) return false;
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


// A word without a possessive ("Australia's") or a plural 's' ("PDFs", "charges"), so that a
// name or word matches its other inflection.
std::string word_stem(const std::string& lower) {
  std::string w = lower;
  if (w.size() > 2 && w.compare(w.size() - 2, 2, "'s") == 0) w.resize(w.size() - 2);
  if (w.size() > 3 && w.back() == 's' && w[w.size() - 2] != 's') w.pop_back();
  return w;
}

bool numeric(const Token& t) {
  return (!t.lower.empty() && std::isdigit(static_cast<unsigned char>(t.lower[0]))) || number_words().count(t.lower);
}

// Months that are also ordinary words count only as written mid-sentence with a capital, or
// next to a number ("May I ask" and "march on" are not dates; "in May", "May 2024" are).
bool is_date_word(const std::vector<Token>& tokens, std::size_t i) {
  const Token& t = tokens[i];
  if (!date_words().count(t.lower)) return false;
  if (t.lower == "may" || t.lower == "march") {
    const bool capital_mid = std::isupper(static_cast<unsigned char>(t.raw[0])) && !t.sentence_start;
    const bool by_number = (i + 1 < tokens.size() && has_digit(tokens[i + 1].lower)) || (i > 0 && has_digit(tokens[i - 1].lower));
    return capital_mid || by_number;
  }
  // "Good morning" greets; it does not ask about the morning.
  return !(i > 0 && tokens[i - 1].lower == "good");
}

// Marks the tokens inside polite formulas, whose negations do not negate the question.
std::vector<bool> polite_tokens(const std::vector<Token>& tokens) {
  std::vector<bool> polite(tokens.size(), false);
  for (const auto& formula : polite_formulas()) {
    for (std::size_t i = 0; i + formula.size() <= tokens.size(); ++i) {
      bool match = true;
      for (std::size_t k = 0; k < formula.size() && match; ++k) match = tokens[i + k].lower == formula[k];
      if (match) std::fill(polite.begin() + i, polite.begin() + i + formula.size(), true);
    }
  }
  return polite;
}

// Whether a word after a number is its unit: a known unit, or a plural noun that counts
// ("2 cups", "3 replicas"); not a verb or a word that starts the rest ("404 mean", "5 of").
bool number_unit(const std::string& next) {
  if (!has_alpha(next) || has_digit(next) || not_units().count(next)) return false;
  if (unit_spellings().count(next)) return true;
  return next.size() > 3 && next.back() == 's' && next[next.size() - 2] != 's';
}

// A content word as the topic guard compares it: synonyms and comparatives folded, then the
// Porter stem ("meaning" = "mean", "installed" = "install").
std::string content_word(const std::string& lower) {
  static const retrieval::Analyzer stemmer(retrieval::AnalyzerOptions{"porter", "none", {}, 64});
  std::string w = word_stem(lower);
  if (auto c = comparative_words().find(lower); c != comparative_words().end()) w = c->second;
  if (auto s = topic_synonyms().find(w); s != topic_synonyms().end()) w = s->second;
  return stemmer.stem(w);
}

// An antonym class and side as one content word, so that "enable" and "turn on" agree.
std::string polar_word(std::pair<int, int> polar) {
  return "~" + std::to_string(polar.first) + (polar.second ? "b" : "a");
}

// The unit written after a number token at i: in the same word ("5gb") or the next.
std::string number_with_unit(const std::vector<Token>& tokens, std::size_t i, std::string n) {
  std::size_t letters = n.size();
  while (letters > 0 && !std::isdigit(static_cast<unsigned char>(n[letters - 1])) && n[letters - 1] != '.') --letters;
  if (letters < n.size()) {  // "5gb", "10ms", "1st"
    const std::string suffix = n.substr(letters);
    if (suffix == "st" || suffix == "nd" || suffix == "rd" || suffix == "th") return n;
    return n.substr(0, letters) + " " + unit_spelling(suffix);
  }
  if (i + 1 < tokens.size()) {
    const std::string& next = tokens[i + 1].lower;
    if (number_unit(next)) return n + " " + unit_spelling(next);
  }
  return n;
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
    case Guard::kTopic: return "topic";
  }
  return "?";
}

QuestionFeatures question_features(std::string_view question) {
  QuestionFeatures f;
  const std::vector<Token> tokens = tokenize(question);
  const std::vector<bool> polite = polite_tokens(tokens);
  const PolarIndex& polar = polar_index();
  int negations = 0;
  std::string name_head;  // the last word of the run of entity words being read
  auto end_name = [&] {
    if (!name_head.empty()) f.entities.push_back(std::move(name_head));
    name_head.clear();
  };
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const Token& t = tokens[i];
    const std::string& w = t.lower;
    f.words.push_back(w);
    f.words.push_back(word_stem(w));
    const bool negation = negation_cues().count(w) || (w.size() > 3 && w.compare(w.size() - 3, 3, "n't") == 0);
    if (!polite[i] && negation) ++negations;
    // Content words for the topic guard; a number's unit is the number guard's.
    const bool unit = i > 0 && numeric(tokens[i - 1]) && number_unit(tokens[i].lower);
    if (!negation && !polite[i] && !unit && !function_words().count(w) && !has_digit(w) && !polar.words.count(w) &&
        !(i + 1 < tokens.size() && polar.phrases.count(w + " " + tokens[i + 1].lower))) {
      f.content.push_back(content_word(w));
      f.spelled.push_back(word_stem(w));
    }
    // Names: a run of entity words is one name, known by its last word ("Microsoft Word" is a
    // Word; "Google Drive" is not a "Google Cloud").
    if (is_entity(t)) {
      name_head = word_stem(w);
    } else {
      end_name();
    }
    // Antonyms: a two-word phrase first ("turn on"), then the word alone.
    if (i + 1 < tokens.size()) {
      auto p = polar.phrases.find(w + " " + tokens[i + 1].lower);
      if (p != polar.phrases.end()) {
        f.polar.push_back(p->second);
        f.content.push_back(polar_word(p->second));
        ++i;
        f.words.push_back(tokens[i].lower);
        continue;
      }
    }
    if (auto p = polar.words.find(w); p != polar.words.end()) {
      f.polar.push_back(p->second);
      f.content.push_back(polar_word(p->second));  // "enable" = "turn on" for the topic guard too
    }
    // Numbers, with the unit that follows them (in the same word or the next), and ordinals.
    if (has_digit(w)) {
      std::string n = strip_commas(w);
      const bool leading_digit = std::isdigit(static_cast<unsigned char>(n[0])) || n[0] == '.';
      f.numbers.push_back(leading_digit ? number_with_unit(tokens, i, n) : n);  // v2, gpt-4: the entity guard's too
      if (n.size() == 4 && (n.rfind("19", 0) == 0 || n.rfind("20", 0) == 0) && !has_alpha(n)) f.dates.push_back(n);
    } else if (auto nw = number_words().find(w); nw != number_words().end()) {
      f.numbers.push_back(number_with_unit(tokens, i, nw->second));
    } else if (w == "second" && !(i > 0 && (numeric(tokens[i - 1]) || tokens[i - 1].lower == "per" ||
                                           tokens[i - 1].lower == "every" || tokens[i - 1].lower == "each" ||
                                           tokens[i - 1].lower == "a"))) {
      f.numbers.push_back("2nd");  // "the second half"; "5 second", "per second", "a second" are time
    }
    // Rates: "per second" and "per minute" differ as much as 10 and 100 do; "daily" is "per day".
    if ((w == "per" || w == "every" || w == "each") && i + 1 < tokens.size() && unit_spellings().count(tokens[i + 1].lower)) {
      f.numbers.push_back("per " + unit_spelling(tokens[i + 1].lower));
    }
    if (auto r = rate_adverbs().find(w); r != rate_adverbs().end()) f.numbers.push_back(r->second);
    // Dates: names, relative days, and "last/next/this <period>".
    if (is_date_word(tokens, i)) f.dates.push_back(w);
    // "this" only before a period word ("this error" is no date); the others before any noun
    // ("last sprint", "next release").
    if (i + 1 < tokens.size() && has_alpha(tokens[i + 1].lower) && !function_words().count(tokens[i + 1].lower) &&
        (w == "last" || w == "next" || w == "previous" || w == "coming" || w == "past" ||
         (w == "this" && period_words().count(tokens[i + 1].lower)))) {
      f.dates.push_back(w == "previous" || w == "past" ? "last " + tokens[i + 1].lower : w + " " + tokens[i + 1].lower);
    }
    if (auto c = comparative_words().find(w); c != comparative_words().end()) f.comparatives.push_back(c->second);
  }
  end_name();
  f.negated = negations % 2 == 1;
  sort_unique(f.polar);
  std::sort(f.numbers.begin(), f.numbers.end());
  sort_unique(f.dates);
  sort_unique(f.entities);
  sort_unique(f.words);
  sort_unique(f.comparatives);
  sort_unique(f.content);
  sort_unique(f.spelled);
  return f;
}

std::optional<Guard> guard_mismatch(const QuestionFeatures& a, const QuestionFeatures& b) {
  if (a.negated != b.negated) return Guard::kNegation;
  // Opposites: a class of opposites both questions use, used on different sides. A class only
  // one question uses is a rewording ("restore" vs "get back a deleted file"); saying the
  // opposite takes the opposite word or a negation, which the negation guard counts.
  auto opposite_in = [](const auto& x, const auto& y) {  // a class of x's that y uses only on the other side
    for (const auto& [cls, side] : x) {
      bool same_class = false, same_side = false;
      for (const auto& [cls_y, side_y] : y) {
        if (cls_y != cls) continue;
        same_class = true;
        same_side = same_side || side_y == side;
      }
      if (same_class && !same_side) return true;
    }
    return false;
  };
  if (opposite_in(a.polar, b.polar) || opposite_in(b.polar, a.polar)) return Guard::kAntonym;
  if (a.numbers != b.numbers) return Guard::kNumber;
  if (a.dates != b.dates) return Guard::kDate;
  // A name (its last word) must appear among the other question's words (capitalisation aside).
  auto covered = [](const std::vector<std::string>& entities, const std::vector<std::string>& words) {
    return std::all_of(entities.begin(), entities.end(),
                       [&](const std::string& e) { return std::binary_search(words.begin(), words.end(), e); });
  };
  if (!covered(a.entities, b.words) || !covered(b.entities, a.words)) return Guard::kEntity;
  if (a.comparatives != b.comparatives) return Guard::kComparative;
  std::vector<std::string> only_a, only_b;
  std::set_difference(a.content.begin(), a.content.end(), b.content.begin(), b.content.end(), std::back_inserter(only_a));
  std::set_difference(b.content.begin(), b.content.end(), a.content.begin(), a.content.end(), std::back_inserter(only_b));
  // A word against its reversal by prefix (pin/unpin, activate/deactivate, like/dislike),
  // which no word list can hold in full.
  for (const std::string& x : only_a) {
    for (const std::string& y : only_b) {
      const std::string& shorter = x.size() < y.size() ? x : y;
      const std::string& longer = x.size() < y.size() ? y : x;
      for (const char* prefix : {"un", "de", "dis"}) {
        if (longer == prefix + shorter) return Guard::kAntonym;
      }
    }
  }
  // One content word swapped for another, not a typo of it: within two edits folded, or as
  // written (a misspelt word is not folded: "acess" vs "access", which folds to "permission").
  // (A word of an antonym class against another word is the antonym guard's: one-sided, it passes.)
  if (only_a.size() == 1 && only_b.size() == 1 && only_a[0][0] != '~' && only_b[0][0] != '~' &&
      typo_distance(only_a[0], only_b[0]) > 2 && !one_typo_apart(a.spelled, b.spelled)) {
    return Guard::kTopic;
  }
  // Different words on both sides outweighing the shared ones: another question about the same
  // things ("give a variable a default in a pipeline file" vs "validate a pipeline file").
  std::size_t shared = a.content.size() - only_a.size();
  const std::size_t most = std::max(only_a.size(), only_b.size());
  if (!only_a.empty() && !only_b.empty() && most >= 3 && shared < most) return Guard::kTopic;
  return std::nullopt;
}

}  // namespace sluice::cache
