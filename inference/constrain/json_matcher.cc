#include "inference/constrain/json_matcher.h"

#include <algorithm>

namespace sluice::constrain {
namespace {

enum FrameKind : std::uint8_t { kValue, kLit, kStr, kNum, kObj, kFobj, kArr };

// String phases.
enum : std::uint8_t { S_OPEN, S_BODY, S_ESC, S_HEX, S_UTF8 };
// Number phases; the accepting ones can end the number.
enum : std::uint8_t { N_START, N_MINUS, N_ZERO, N_INT, N_DOT, N_FRAC, N_E, N_ESIGN, N_EXP };
bool number_accepts(std::uint8_t phase) { return phase == N_ZERO || phase == N_INT || phase == N_FRAC || phase == N_EXP; }
// Object phases (a = property index, b = position in its prefix).
enum : std::uint8_t { O_OPEN, O_PREFIX, O_GAP, O_AFTER, O_CLOSE };
// Free-object phases.
enum : std::uint8_t { F_OPEN, F_FIRST, F_KEYSTART, F_COLON, F_GAP, F_NEXT };
// Array phases (a = items begun).
enum : std::uint8_t { A_OPEN, A_FIRST, A_NEXT, A_ITEMSTART };

bool digit(std::uint8_t c) { return c >= '0' && c <= '9'; }
bool hex(std::uint8_t c) { return digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

void emit(const std::vector<Frame>& stack, MatchState& out) {
  // Identical readings (anyOf alternatives that converged) are kept once.
  std::uint32_t begin = 0;
  for (std::uint32_t end : out.ends) {
    if (end - begin == stack.size() && std::equal(stack.begin(), stack.end(), out.frames.begin() + begin)) return;
    begin = end;
  }
  out.frames.insert(out.frames.end(), stack.begin(), stack.end());
  out.ends.push_back(std::uint32_t(out.frames.size()));
}

// The one optional space of a gap (after ':' or ','): true when `c` is it, now used.
bool optional_space(Frame& f, std::uint8_t c) {
  if (c != ' ' || f.spaced) return false;
  f.spaced = 1;
  return true;
}

}  // namespace

MatchState JsonMatcher::start() const {
  MatchState s;
  s.frames.push_back(Frame{g_.root(), kValue});
  s.ends.push_back(1);
  return s;
}

void JsonMatcher::open_value(std::vector<Frame>& stack, std::uint32_t node, std::uint8_t c, MatchState& out, int depth) const {
  if (stack.size() >= std::size_t(JsonGrammar::kMaxDepth)) return;  // nesting limit: refused
  stack.push_back(Frame{node, kValue});
  step(stack, c, out, depth + 1);
}

void JsonMatcher::advance(const MatchState& in, std::uint8_t c, MatchState& out) const {
  out.clear();
  thread_local std::vector<Frame> work;
  std::uint32_t begin = 0;
  for (std::uint32_t end : in.ends) {
    work.assign(in.frames.begin() + begin, in.frames.begin() + end);
    step(work, c, out, 0);
    begin = end;
  }
}

void JsonMatcher::step(std::vector<Frame>& s, std::uint8_t c, MatchState& out, int depth) const {
  if (s.empty() || depth > 2 * JsonGrammar::kMaxDepth) return;  // complete: nothing may follow
  Frame& f = s.back();
  const GrammarNode& n = g_.node(f.node);
  switch (f.kind) {
    case kValue: {
      if (!n.can_start_with(c)) return;
      switch (n.kind) {
        case NodeKind::kAnyOf: {
          std::uint32_t only = 0;
          int matching = 0;
          for (std::uint32_t alt : n.children)
            if (g_.node(alt).can_start_with(c)) {
              only = alt;
              ++matching;
            }
          if (matching == 1) {  // the common case: decided by this byte, no copy
            f.node = only;
            return step(s, c, out, depth + 1);
          }
          for (std::uint32_t alt : n.children) {
            if (!g_.node(alt).can_start_with(c)) continue;
            std::vector<Frame> copy = s;
            copy.back().node = alt;
            step(copy, c, out, depth + 1);
          }
          return;
        }
        case NodeKind::kLiteral: f.kind = kLit; break;
        case NodeKind::kString: f.kind = kStr; f.phase = S_OPEN; break;
        case NodeKind::kNumber:
        case NodeKind::kInteger: f.kind = kNum; f.phase = N_START; break;
        case NodeKind::kObject: f.kind = kObj; f.phase = O_OPEN; break;
        case NodeKind::kFreeObject: f.kind = kFobj; f.phase = F_OPEN; break;
        case NodeKind::kArray: f.kind = kArr; f.phase = A_OPEN; break;
      }
      return step(s, c, out, depth + 1);
    }
    case kLit:
      if (std::uint8_t(n.literal[f.a]) != c) return;
      if (++f.a == n.literal.size()) s.pop_back();
      return emit(s, out);
    case kStr:
      switch (f.phase) {
        case S_OPEN:
          if (c != '"') return;
          f.phase = S_BODY;
          return emit(s, out);
        case S_BODY:
          if (c == '"') {
            if (f.a < n.min_count) return;
            s.pop_back();
            return emit(s, out);
          }
          if (c < 0x20 || f.a >= n.max_count) return;
          if (c == '\\') {
            f.phase = S_ESC;
          } else if (c >= 0x80) {
            if (c >= 0xC2 && c <= 0xDF) f.b = 1;
            else if (c >= 0xE0 && c <= 0xEF) f.b = 2;
            else if (c >= 0xF0 && c <= 0xF4) f.b = 3;
            else return;  // not a UTF-8 lead byte
            f.phase = S_UTF8;
          }
          ++f.a;
          return emit(s, out);
        case S_ESC:
          if (c == 'u') {
            f.phase = S_HEX;
            f.b = 4;
          } else if (c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'n' || c == 'r' || c == 't') {
            f.phase = S_BODY;
          } else {
            return;
          }
          return emit(s, out);
        case S_HEX:
          if (!hex(c)) return;
          if (--f.b == 0) f.phase = S_BODY;
          return emit(s, out);
        case S_UTF8:
          if (c < 0x80 || c > 0xBF) return;
          if (--f.b == 0) f.phase = S_BODY;
          return emit(s, out);
      }
      return;
    case kNum: {
      const bool integer = n.kind == NodeKind::kInteger;
      if (n.bounded) {
        // Digits only while some completion stays inside [min_value, max_value].
        int fewest;
        auto reachable = [&](bool negative, std::int64_t m) {
          return m <= kMaxMagnitude && integer_reachable(negative, m, 18 - decimal_digits(m), n.min_value, n.max_value, &fewest);
        };
        std::uint8_t next = 0xff;
        if (digit(c)) {
          const int d = c - '0';
          if (f.phase == N_START && d == 0 && n.min_value <= 0 && n.max_value >= 0) next = N_ZERO;
          else if ((f.phase == N_START || f.phase == N_MINUS) && d > 0 && reachable(f.phase == N_MINUS, d)) next = N_INT;
          else if (f.phase == N_INT && f.v <= kMaxMagnitude / 10 && reachable(f.spaced, f.v * 10 + d)) next = N_INT;
          if (next == N_INT) f.v = f.v * 10 + d;
        } else if (c == '-' && f.phase == N_START && n.min_value < 0) {
          next = N_MINUS;
          f.spaced = 1;
        }
        if (next != 0xff) {
          f.phase = next;
          ++f.a;
          return emit(s, out);
        }
        if (!number_complete(f)) return;
        s.pop_back();
        return step(s, c, out, depth + 1);
      }
      const bool room = f.a < std::uint32_t(JsonGrammar::kMaxNumberBytes);
      std::uint8_t next = 0xff;
      switch (f.phase) {
        case N_START:
          if (c == '-') next = N_MINUS;
          else if (c == '0') next = N_ZERO;
          else if (digit(c)) next = N_INT;
          break;
        case N_MINUS:
          if (c == '0') next = N_ZERO;
          else if (digit(c)) next = N_INT;
          break;
        case N_ZERO:
        case N_INT:
          if (f.phase == N_INT && digit(c)) next = N_INT;
          else if (!integer && c == '.') next = N_DOT;
          else if (!integer && (c == 'e' || c == 'E')) next = N_E;
          break;
        case N_DOT:
          if (digit(c)) next = N_FRAC;
          break;
        case N_FRAC:
          if (digit(c)) next = N_FRAC;
          else if (c == 'e' || c == 'E') next = N_E;
          break;
        case N_E:
          if (c == '+' || c == '-') next = N_ESIGN;
          else if (digit(c)) next = N_EXP;
          break;
        case N_ESIGN:
        case N_EXP:
          // Two exponent digits at most: 1e999 is valid JSON that no double holds.
          if (digit(c) && f.b < 2) next = N_EXP;
          break;
      }
      if (next == N_EXP) ++f.b;
      // A number at its length limit may only end; ending also needs an accepting phase (and
      // the number not at the document's top: there the byte has no parent to go to).
      if (next != 0xff && room) {
        f.phase = next;
        ++f.a;
        return emit(s, out);
      }
      if (!number_complete(f)) return;
      s.pop_back();
      return step(s, c, out, depth + 1);
    }
    case kObj: {
      const std::uint32_t props = std::uint32_t(n.children.size());
      switch (f.phase) {
        case O_OPEN:
          if (c != '{') return;
          if (props == 0) f.phase = O_CLOSE;
          else {
            f.phase = O_PREFIX;
            f.a = 0;
            f.b = 0;
          }
          return emit(s, out);
        case O_PREFIX: {
          const std::string& p = n.prefixes[f.a];
          if (f.a > 0 && f.b == 1 && optional_space(f, c)) return emit(s, out);  // ", " between properties
          if (std::uint8_t(p[f.b]) != c) return;
          if (++f.b == p.size()) {
            f.phase = O_GAP;
            f.spaced = 0;
          }
          return emit(s, out);
        }
        case O_GAP:
          if (optional_space(f, c)) return emit(s, out);  // ": "
          f.phase = O_AFTER;
          return open_value(s, n.children[f.a], c, out, depth);
        case O_AFTER:
          if (f.a + 1 < props) {
            f.phase = O_PREFIX;
            ++f.a;
            f.b = 0;
            f.spaced = 0;
            return step(s, c, out, depth + 1);
          }
          [[fallthrough]];
        case O_CLOSE:
          if (c != '}') return;
          s.pop_back();
          return emit(s, out);
      }
      return;
    }
    case kFobj:
      switch (f.phase) {
        case F_OPEN:
          if (c != '{') return;
          f.phase = F_FIRST;
          return emit(s, out);
        case F_FIRST:
          if (c == '}') {
            s.pop_back();
            return emit(s, out);
          }
          f.phase = F_COLON;
          return open_value(s, n.children[1], c, out, depth);
        case F_KEYSTART:
          if (optional_space(f, c)) return emit(s, out);
          f.phase = F_COLON;
          return open_value(s, n.children[1], c, out, depth);
        case F_COLON:
          if (c != ':') return;
          f.phase = F_GAP;
          f.spaced = 0;
          return emit(s, out);
        case F_GAP:
          if (optional_space(f, c)) return emit(s, out);
          f.phase = F_NEXT;
          return open_value(s, n.children[0], c, out, depth);
        case F_NEXT:
          if (c == ',') {
            f.phase = F_KEYSTART;
            f.spaced = 0;
            return emit(s, out);
          }
          if (c != '}') return;
          s.pop_back();
          return emit(s, out);
      }
      return;
    case kArr:
      switch (f.phase) {
        case A_OPEN:
          if (c != '[') return;
          f.phase = A_FIRST;
          return emit(s, out);
        case A_FIRST:
          if (c == ']') {
            if (n.min_count > 0) return;
            s.pop_back();
            return emit(s, out);
          }
          if (n.max_count == 0) return;
          f.phase = A_NEXT;
          f.a = 1;
          return open_value(s, n.children[0], c, out, depth);
        case A_NEXT:
          if (c == ',' && f.a < n.max_count) {
            f.phase = A_ITEMSTART;
            f.spaced = 0;
            return emit(s, out);
          }
          if (c != ']' || f.a < n.min_count) return;
          s.pop_back();
          return emit(s, out);
        case A_ITEMSTART:
          if (optional_space(f, c)) return emit(s, out);
          f.phase = A_NEXT;
          ++f.a;
          return open_value(s, n.children[0], c, out, depth);
      }
      return;
  }
}

bool JsonMatcher::accepts(const MatchState& st) const {
  std::uint32_t begin = 0;
  for (std::uint32_t end : st.ends) {
    bool ok = true;  // every open frame is a number that may end here
    for (std::uint32_t i = begin; i < end && ok; ++i)
      ok = st.frames[i].kind == kNum && number_complete(st.frames[i]);
    if (ok) return true;
    begin = end;
  }
  return false;
}

bool JsonMatcher::finished(const MatchState& st) const {
  if (st.ends.empty()) return false;
  std::uint32_t begin = 0;
  for (std::uint32_t end : st.ends) {
    if (end != begin) return false;
    begin = end;
  }
  return true;
}

bool JsonMatcher::in_free_string(const MatchState& st) const {
  if (st.ends.size() != 1 || st.frames.empty()) return false;
  const Frame& top = st.frames.back();
  if (top.kind != kStr || top.phase != S_BODY) return false;
  const GrammarNode& n = g_.node(top.node);
  return n.min_count == 0 && n.max_count == kUnbounded;
}

bool JsonMatcher::number_complete(const Frame& f) const {
  if (!number_accepts(f.phase)) return false;
  const GrammarNode& n = g_.node(f.node);
  if (!n.bounded) return true;
  const std::int64_t value = f.spaced ? -f.v : f.v;
  return value >= n.min_value && value <= n.max_value;
}

std::uint32_t JsonMatcher::rest(const Frame& f) const {
  const GrammarNode& n = g_.node(f.node);
  switch (f.kind) {
    case kValue: return n.min_bytes;
    case kLit: return std::uint32_t(n.literal.size() - f.a);
    case kStr: {
      const std::uint32_t chars = f.a < n.min_count ? n.min_count - f.a : 0;
      switch (f.phase) {
        case S_OPEN: return add_bytes(2, n.min_count);
        case S_BODY: return add_bytes(1, chars);
        case S_ESC: return add_bytes(2, chars);
        default: return add_bytes(f.b + 1, chars);  // S_HEX, S_UTF8
      }
    }
    case kNum: {
      if (!n.bounded) return number_accepts(f.phase) ? 0 : 1;
      if (f.phase == N_START) return n.min_bytes;
      if (f.phase == N_ZERO) return 0;
      int fewest = 0;
      if (f.phase == N_MINUS) {
        std::uint32_t best = kInfinite;
        for (int d = 1; d <= 9; ++d)
          if (integer_reachable(true, d, 17, n.min_value, n.max_value, &fewest)) best = std::min(best, std::uint32_t(1 + fewest));
        return best;
      }
      return integer_reachable(f.spaced, f.v, 18 - decimal_digits(f.v), n.min_value, n.max_value, &fewest) ? std::uint32_t(fewest)
                                                                                                         : kInfinite;
    }
    case kObj:
      switch (f.phase) {
        case O_OPEN: return n.min_bytes;
        case O_PREFIX:
          return add_bytes(add_bytes(std::uint32_t(n.prefixes[f.a].size() - f.b), g_.node(n.children[f.a]).min_bytes), n.suffix[f.a + 1]);
        case O_GAP: return add_bytes(g_.node(n.children[f.a]).min_bytes, n.suffix[f.a + 1]);
        case O_AFTER: return n.suffix[f.a + 1];
        default: return 1;  // O_CLOSE
      }
    case kFobj: {
      const std::uint32_t value = g_.node(n.children[0]).min_bytes;
      switch (f.phase) {
        case F_OPEN: return 2;
        case F_FIRST: return 1;
        case F_KEYSTART: return add_bytes(add_bytes(g_.node(n.children[1]).min_bytes, 2), value);  // key ':' value '}'
        case F_COLON: return add_bytes(2, value);
        case F_GAP: return add_bytes(1, value);
        default: return 1;  // F_NEXT
      }
    }
    case kArr: {
      const std::uint32_t item = g_.node(n.children[0]).min_bytes;
      const std::uint32_t per = add_bytes(item, 1);  // ',' item
      switch (f.phase) {
        case A_OPEN: return n.min_bytes;
        case A_FIRST: return n.min_count == 0 ? 1 : add_bytes(add_bytes(multiply_bytes(n.min_count, item), n.min_count - 1), 1);
        case A_NEXT: return f.a >= n.min_count ? 1 : add_bytes(multiply_bytes(n.min_count - f.a, per), 1);
        default:  // A_ITEMSTART: the item after ',' is owed
          return add_bytes(add_bytes(item, f.a + 1 >= n.min_count ? 0 : multiply_bytes(n.min_count - f.a - 1, per)), 1);
      }
    }
  }
  return kInfinite;
}

std::uint32_t JsonMatcher::min_remaining(const MatchState& st) const {
  std::uint32_t best = kInfinite;
  std::uint32_t begin = 0;
  for (std::uint32_t end : st.ends) {
    std::uint32_t sum = 0;
    for (std::uint32_t i = begin; i < end; ++i) sum = add_bytes(sum, rest(st.frames[i]));
    best = std::min(best, sum);
    begin = end;
  }
  return best;
}

}  // namespace sluice::constrain
