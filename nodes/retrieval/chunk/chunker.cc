#include "nodes/retrieval/chunk/chunker.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "graph/document_store.h"
#include "graph/fnv1a.h"

namespace sluice::retrieval {

std::string chunk_key(const Chunk& chunk) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a64(chunk.text)));
  return chunk.doc_id + "#" + hex;
}
namespace {

struct Span {
  std::size_t begin, end;  // bytes
};

bool blank(std::string_view s) { return s.find_first_not_of(" \t\r\n") == std::string_view::npos; }

// Lines as spans including their newline.
std::vector<Span> lines_of(std::string_view text, Span within) {
  std::vector<Span> out;
  std::size_t b = within.begin;
  while (b < within.end) {
    std::size_t e = text.find('\n', b);
    e = (e == std::string_view::npos || e >= within.end) ? within.end : e + 1;
    out.push_back({b, e});
    b = e;
  }
  return out;
}

Span trim(std::string_view text, Span s) {
  while (s.begin < s.end && std::isspace(static_cast<unsigned char>(text[s.begin]))) ++s.begin;
  while (s.end > s.begin && std::isspace(static_cast<unsigned char>(text[s.end - 1]))) --s.end;
  return s;
}

// Paragraphs: maximal runs of non-blank lines.
std::vector<Span> paragraphs(std::string_view text, Span within) {
  std::vector<Span> out;
  std::size_t start = SIZE_MAX, last_end = 0;
  for (const Span& l : lines_of(text, within)) {
    if (blank(text.substr(l.begin, l.end - l.begin))) {
      if (start != SIZE_MAX) out.push_back(trim(text, {start, last_end}));
      start = SIZE_MAX;
    } else {
      if (start == SIZE_MAX) start = l.begin;
      last_end = l.end;
    }
  }
  if (start != SIZE_MAX) out.push_back(trim(text, {start, last_end}));
  return out;
}

// Whether a line is a block of its own in Markdown (heading, table row, code fence, list item,
// quote): it never continues the line before it, and nothing continues it.
bool block_line(std::string_view line) {
  std::size_t i = 0;
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  if (i == line.size()) return true;  // blank: a paragraph break
  const char c = line[i];
  if (c == '#' || c == '|' || c == '>' || line.substr(i, 3) == "```") return true;
  if ((c == '-' || c == '*' || c == '+') && i + 1 < line.size() && line[i + 1] == ' ') return true;
  std::size_t d = i;
  while (d < line.size() && std::isdigit(static_cast<unsigned char>(line[d]))) ++d;
  return d > i && d + 1 < line.size() && (line[d] == '.' || line[d] == ')') && line[d + 1] == ' ';
}

// Whether a line is one nothing continues: a heading, table row or code fence (a list item or
// quote is continued by the plain lines after it, as Markdown reads a wrapped item).
bool closed_line(std::string_view line) {
  std::size_t i = 0;
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  if (i == line.size()) return true;
  const char c = line[i];
  return c == '#' || c == '|' || line.substr(i, 3) == "```";
}

// A sentence ends at . ? ! before whitespace, or at a line break that is not a soft wrap: a
// paragraph or list item hard-wrapped at 100 columns is read as its sentences, not as its
// lines, while a line break before a heading, table row, list item, quote or code fence, or
// after a heading, table row or code fence, still ends one.
std::vector<Span> sentences(std::string_view text, Span p) {
  std::vector<Span> out;
  std::size_t b = p.begin, line_start = p.begin;
  for (std::size_t i = p.begin; i < p.end; ++i) {
    const char c = text[i];
    bool end = (c == '.' || c == '?' || c == '!') && (i + 1 == p.end || std::isspace(static_cast<unsigned char>(text[i + 1])));
    if (end && c == '.') {  // "1. first step": an ordered list's number, not a sentence
      std::size_t k = line_start;
      while (k < i && (text[k] == ' ' || text[k] == '\t')) ++k;
      std::size_t d = k;
      while (d < i && std::isdigit(static_cast<unsigned char>(text[d]))) ++d;
      if (d > k && d == i) end = false;
    }
    if (c == '\n') {
      const std::string_view line = text.substr(line_start, i - line_start);
      std::size_t next_end = text.find('\n', i + 1);
      if (next_end == std::string_view::npos || next_end > p.end) next_end = p.end;
      const std::string_view next = text.substr(i + 1, next_end - (i + 1));
      end = closed_line(line) || block_line(next);
      line_start = i + 1;
    }
    if (end) {
      const Span s = trim(text, {b, i + 1});
      if (s.end > s.begin) out.push_back(s);
      b = i + 1;
    }
  }
  const Span s = trim(text, {b, p.end});
  if (s.end > s.begin) out.push_back(s);
  return out;
}

std::vector<Span> words(std::string_view text, Span p) {
  std::vector<Span> out;
  std::size_t i = p.begin;
  while (i < p.end) {
    while (i < p.end && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    const std::size_t b = i;
    while (i < p.end && !std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (i > b) out.push_back({b, i});
  }
  return out;
}

struct Unit {
  Span span;
  std::size_t tokens;
};

class Packer {
 public:
  Packer(std::string_view text, const ChunkingOptions& o, const TokenCounter& count)
      : text_(text), max_(o.max_tokens), overlap_(static_cast<std::size_t>(o.overlap * o.max_tokens)), count_(count) {}

  // Narrative units of `s` no larger than max_tokens each, finest level needed.
  void add_narrative(Span s) {
    for (const Span& p : paragraphs(text_, s)) add_splitting(p, 0);
  }
  // A unit that should stay whole when it fits (a function, an FAQ entry).
  void add_atomic(Span s, bool lines_when_too_big) {
    s = trim(text_, s);
    if (s.end <= s.begin) return;
    const std::size_t t = count_(text_.substr(s.begin, s.end - s.begin));
    flush();
    if (t <= max_) {
      units_.push_back({s, t});
      ++fresh_;
      flush();
      return;
    }
    if (lines_when_too_big) {
      for (const Span& l : lines_of(text_, s)) {
        const Span tl = trim(text_, l);
        if (tl.end > tl.begin) add_splitting(tl, 2);
      }
    } else {
      add_splitting(s, 0);
    }
    flush();
  }
  // Closes the current chunk (no overlap carried into the next unit group).
  void flush() {
    emit();
    units_.clear();
    fresh_ = 0;
  }
  std::vector<Span> take() {
    flush();
    return std::move(chunks_);
  }

 private:
  // level 0 paragraph -> sentences, 1 sentence -> words, 2 line -> words.
  void add_splitting(Span s, int level) {
    const std::size_t t = count_(text_.substr(s.begin, s.end - s.begin));
    if (t <= max_ || level >= 3) {
      push({s, t});
      return;
    }
    if (level == 0) {
      for (const Span& x : sentences(text_, s)) add_splitting(x, 1);
    } else {
      for (const Span& w : words(text_, s)) push({w, count_(text_.substr(w.begin, w.end - w.begin))});
    }
  }
  void push(Unit u) {
    std::size_t total = 0;
    for (const Unit& x : units_) total += x.tokens;
    if (!units_.empty() && total + u.tokens > max_) {
      emit();
      // Carry the trailing units that fit the overlap budget into the next chunk.
      std::size_t carried = 0, keep = units_.size();
      while (keep > 0 && carried + units_[keep - 1].tokens <= overlap_ &&
             carried + units_[keep - 1].tokens + u.tokens <= max_) {
        carried += units_[keep - 1].tokens;
        --keep;
      }
      units_.erase(units_.begin(), units_.begin() + static_cast<std::ptrdiff_t>(keep));
      fresh_ = 0;
    }
    units_.push_back(u);
    ++fresh_;
  }
  void emit() {
    if (units_.empty() || fresh_ == 0) return;  // nothing new since the last chunk
    chunks_.push_back({units_.front().span.begin, units_.back().span.end});
    fresh_ = 0;
  }

  std::string_view text_;
  std::size_t max_, overlap_;
  const TokenCounter& count_;
  std::vector<Unit> units_;
  std::size_t fresh_ = 0;  // units added since the last emitted chunk
  std::vector<Span> chunks_;
};

bool starts_faq_entry(std::string_view line) {
  const Span t{0, line.size()};
  std::size_t b = t.begin;
  while (b < line.size() && (line[b] == ' ' || line[b] == '\t')) ++b;
  std::string_view s = line.substr(b);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  if (s.rfind("Q:", 0) == 0 || s.rfind("Q.", 0) == 0 || s.rfind("Question:", 0) == 0) return true;
  return !s.empty() && s[0] == '#' && s.back() == '?';
}

// Top-level definitions of brace languages: spans from the first line of the leading comment
// block or signature to the closing brace (plus a trailing ';').
void chunk_brace_code(std::string_view text, Span within, Packer& packer) {
  std::size_t depth = 0, stmt_start = within.begin, i = within.begin;
  std::size_t loose_start = within.begin;  // start of top-level code not yet emitted
  std::vector<std::size_t> entered;         // depths at which we entered a namespace-like block
  auto is_container = [&](std::size_t b, std::size_t e) {
    std::string_view head = text.substr(b, e - b);
    return head.find("namespace") != std::string_view::npos || head.find("extern \"C\"") != std::string_view::npos;
  };
  auto top = [&] { return entered.empty() ? std::size_t{0} : entered.back(); };
  while (i < within.end) {
    const char c = text[i];
    if (c == '/' && i + 1 < within.end && text[i + 1] == '/') {
      i = text.find('\n', i);
      if (i == std::string_view::npos || i > within.end) i = within.end;
      continue;
    }
    if (c == '/' && i + 1 < within.end && text[i + 1] == '*') {
      const std::size_t e = text.find("*/", i + 2);
      i = (e == std::string_view::npos || e + 2 > within.end) ? within.end : e + 2;
      continue;
    }
    if (c == '"' || c == '\'' || c == '`') {
      for (++i; i < within.end && text[i] != c; ++i) {
        if (text[i] == '\\') ++i;
      }
      ++i;
      continue;
    }
    if (c == '{') {
      if (depth == top() && is_container(stmt_start, i)) {
        entered.push_back(depth + 1);
        packer.add_narrative({loose_start, i + 1});
        loose_start = i + 1;
        stmt_start = i + 1;
      }
      ++depth;
    } else if (c == '}') {
      if (depth > 0) --depth;
      if (!entered.empty() && depth + 1 == entered.back()) {
        entered.pop_back();
        packer.add_narrative({loose_start, i + 1});
        loose_start = stmt_start = i + 1;
      } else if (depth == top()) {
        std::size_t end = i + 1;
        if (end < within.end && text[end] == ';') ++end;
        // The definition starts at its statement start, pulled back over the comment lines
        // directly above it (they belong to it, not to the loose code before).
        std::size_t def_begin = stmt_start;
        while (def_begin < end && std::isspace(static_cast<unsigned char>(text[def_begin]))) ++def_begin;
        packer.add_narrative({loose_start, std::min(stmt_start, def_begin)});
        packer.add_atomic({def_begin, end}, true);
        loose_start = stmt_start = end;
        i = end;
        continue;
      }
    } else if (c == ';' && depth == top()) {
      stmt_start = i + 1;
    } else if (c == '#' && depth == top()) {  // preprocessor line: its own statement
      const std::size_t e = text.find('\n', i);
      i = (e == std::string_view::npos || e > within.end) ? within.end : e;
      stmt_start = i;
      continue;
    }
    ++i;
  }
  packer.add_narrative({loose_start, within.end});
}

void chunk_python(std::string_view text, Span within, Packer& packer) {
  const auto lines = lines_of(text, within);
  std::size_t loose_start = within.begin;
  std::size_t def_start = SIZE_MAX;  // start of the open definition (incl. decorators/comments)
  std::size_t pending = SIZE_MAX;    // start of decorators/comments that may precede a def
  auto column0 = [&](const Span& l) {
    return l.end > l.begin && !std::isspace(static_cast<unsigned char>(text[l.begin]));
  };
  for (const Span& l : lines) {
    std::string_view s = text.substr(l.begin, l.end - l.begin);
    if (!column0(l)) continue;  // indented or blank: belongs to whatever is open
    const bool opener = s.rfind("def ", 0) == 0 || s.rfind("class ", 0) == 0 || s.rfind("async def ", 0) == 0;
    const bool prefix = s[0] == '@' || s[0] == '#';
    if (def_start != SIZE_MAX) {
      // Any column-0 line ends the open definition.
      const std::size_t end = pending != SIZE_MAX ? pending : l.begin;
      packer.add_atomic({def_start, end}, true);
      loose_start = end;
      def_start = SIZE_MAX;
    }
    if (prefix) {
      if (pending == SIZE_MAX) pending = l.begin;
      continue;
    }
    if (opener) {
      const std::size_t b = pending != SIZE_MAX ? pending : l.begin;
      packer.add_narrative({loose_start, b});
      def_start = b;
    }
    pending = SIZE_MAX;
  }
  if (def_start != SIZE_MAX) {
    packer.add_atomic({def_start, within.end}, true);
    loose_start = within.end;
  }
  packer.add_narrative({loose_start, within.end});
}

}  // namespace

std::vector<std::pair<std::size_t, std::size_t>> split_sentences(std::string_view text) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  for (const Span& s : sentences(text, {0, text.size()})) out.emplace_back(s.begin, s.end);
  return out;
}

std::vector<Chunk> chunk_document(const SourceDocument& doc, const ChunkingOptions& options,
                                  const TokenCounter& count_tokens) {
  if (options.max_tokens == 0) throw std::invalid_argument("chunking.max_tokens must be > 0");
  if (!(options.overlap >= 0 && options.overlap <= 0.5)) {
    throw std::invalid_argument("chunking.overlap must be in [0, 0.5]");
  }
  const std::string_view text = doc.text;
  Packer packer(text, options, count_tokens);
  const Span all{0, text.size()};
  switch (doc.kind) {
    case DocumentKind::kNarrative:
      packer.add_narrative(all);
      break;
    case DocumentKind::kFaq: {
      std::size_t entry = SIZE_MAX;
      std::size_t loose = 0;
      for (const Span& l : lines_of(text, all)) {
        if (!starts_faq_entry(text.substr(l.begin, l.end - l.begin))) continue;
        if (entry == SIZE_MAX) {
          packer.add_narrative({loose, l.begin});
        } else {
          packer.add_atomic({entry, l.begin}, false);
        }
        entry = l.begin;
      }
      if (entry == SIZE_MAX) {
        packer.add_narrative({loose, text.size()});
      } else {
        packer.add_atomic({entry, text.size()}, false);
      }
      break;
    }
    case DocumentKind::kCode:
      if (doc.language == CodeLanguage::kPython) {
        chunk_python(text, all, packer);
      } else {
        chunk_brace_code(text, all, packer);
      }
      break;
  }
  std::vector<Chunk> out;
  for (const Span& s : packer.take()) {
    Chunk c;
    c.doc_id = doc.id;
    c.title = doc.title;
    c.text = std::string(text.substr(s.begin, s.end - s.begin));
    c.begin = static_cast<std::uint32_t>(s.begin);
    c.end = static_cast<std::uint32_t>(s.end);
    c.ordinal = static_cast<std::uint32_t>(out.size());
    out.push_back(std::move(c));
  }
  if (out.empty() && !is_blank(doc.title)) {
    // A document that is only its title (a BEIR record with no text) is one chunk: the title is
    // what BM25 and the dense path read (index_text).
    Chunk c;
    c.doc_id = doc.id;
    c.title = doc.title;
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace sluice::retrieval
