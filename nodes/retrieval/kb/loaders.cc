#include "nodes/retrieval/kb/loaders.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "graph/document_id.h"
#include "graph/document_store.h"

namespace sluice::retrieval {
namespace fs = std::filesystem;
namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string first_line_title(const std::string& text, bool markdown) {
  std::istringstream in(text);
  std::string line, first;
  while (std::getline(in, line)) {
    if (is_blank(line)) continue;
    if (markdown && line.rfind("# ", 0) == 0) return line.substr(2);
    if (first.empty()) first = line;
    if (!markdown) break;
  }
  while (!first.empty() && (first.front() == '#' || first.front() == ' ')) first.erase(first.begin());
  if (first.size() > 200) first.resize(200);
  return first;
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (std::size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
}

}  // namespace

std::string html_to_text(const std::string& html, std::string* title) {
  std::string out;
  const std::string lo = lower(html);
  std::size_t i = 0;
  static const char* const kBlocks[] = {"p", "/p", "br", "br/", "div", "/div", "h1", "h2", "h3", "h4", "h5", "h6",
                                        "/h1", "/h2", "/h3", "/h4", "/h5", "/h6", "li", "tr", "pre", "/pre",
                                        "section", "article", "table", "/table", "ul", "/ul", "ol", "/ol"};
  while (i < html.size()) {
    if (html[i] != '<') {
      out.push_back(html[i++]);
      continue;
    }
    for (const char* skip : {"script", "style"}) {
      if (lo.compare(i + 1, std::strlen(skip), skip) == 0) {
        const std::size_t e = lo.find(std::string("</") + skip, i);
        i = e == std::string::npos ? html.size() : e;
        break;
      }
    }
    if (i >= html.size()) break;
    if (lo.compare(i, 7, "<title>") == 0) {
      const std::size_t e = lo.find("</title>", i);
      if (title != nullptr && e != std::string::npos) *title = html.substr(i + 7, e - i - 7);
      i = e == std::string::npos ? html.size() : e + 8;
      continue;
    }
    if (lo.compare(i, 4, "<!--") == 0) {
      const std::size_t e = lo.find("-->", i);
      i = e == std::string::npos ? html.size() : e + 3;
      continue;
    }
    const std::size_t e = html.find('>', i);
    if (e == std::string::npos) break;
    std::string tag = lo.substr(i + 1, e - i - 1);
    tag = tag.substr(0, tag.find_first_of(" \t\n"));
    bool block = false;
    for (const char* b : kBlocks) block |= tag == b;
    out += block ? "\n\n" : " ";
    i = e + 1;
  }
  for (auto [from, to] : {std::pair{"&nbsp;", " "}, {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&#39;", "'"}, {"&amp;", "&"}}) {
    replace_all(out, from, to);
    if (title != nullptr) replace_all(*title, from, to);
  }
  // Collapse runs of blank lines and trailing spaces.
  std::string clean;
  std::istringstream in(out);
  std::string line;
  int blanks = 0;
  while (std::getline(in, line)) {
    const auto b = line.find_first_not_of(" \t\r");
    if (b == std::string::npos) {
      ++blanks;
      continue;
    }
    if (!clean.empty()) clean += blanks > 0 ? "\n\n" : "\n";
    blanks = 0;
    clean += line.substr(b, line.find_last_not_of(" \t\r") - b + 1);
  }
  return clean;
}

std::optional<TextFormat> format_of_name(const std::string& name) {
  const std::string ext = lower(fs::path(name).extension().string());
  // Configuration files are read as text: a pipeline or alerting rules file documents a system
  // as much as its prose does (docs/alerts.yaml is part of the default knowledge base).
  if (ext == ".txt" || ext == ".text" || ext == ".rst" || ext == ".yaml" || ext == ".yml" || ext == ".toml") return TextFormat::kText;
  if (ext == ".md" || ext == ".markdown") return TextFormat::kMarkdown;
  if (ext == ".html" || ext == ".htm") return TextFormat::kHtml;
  if (ext == ".c" || ext == ".cc" || ext == ".cpp" || ext == ".cxx" || ext == ".h" || ext == ".hh" || ext == ".hpp") {
    return TextFormat::kCpp;
  }
  if (ext == ".py") return TextFormat::kPython;
  if (ext == ".js" || ext == ".mjs" || ext == ".cjs") return TextFormat::kJavaScript;
  return std::nullopt;
}

bool is_faq_name(const std::string& name) {
  return lower(fs::path(name).filename().string()).find("faq") != std::string::npos;
}

std::optional<SourceDocument> make_document(std::string id, std::string title, const std::string& content,
                                            TextFormat format, bool faq) {
  // A title given with no text is a document of its title (as a JSONL record's is); a title
  // made up below from the content or the name is not.
  const bool titled = !is_blank(title);
  const DocumentKind prose_kind = faq ? DocumentKind::kFaq : DocumentKind::kNarrative;
  SourceDocument d;
  switch (format) {
    case TextFormat::kText:
    case TextFormat::kMarkdown:
      d = {std::move(id), std::move(title), content, prose_kind, CodeLanguage::kNone};
      if (d.title.empty()) d.title = first_line_title(content, format == TextFormat::kMarkdown);
      break;
    case TextFormat::kHtml: {
      std::string html_title;
      std::string text = html_to_text(content, &html_title);
      if (title.empty()) title = html_title.empty() ? first_line_title(text, false) : html_title;
      d = {std::move(id), std::move(title), std::move(text), prose_kind, CodeLanguage::kNone};
      break;
    }
    case TextFormat::kCpp:
    case TextFormat::kPython:
    case TextFormat::kJavaScript: {
      const CodeLanguage language = format == TextFormat::kCpp      ? CodeLanguage::kCpp
                                    : format == TextFormat::kPython ? CodeLanguage::kPython
                                                                    : CodeLanguage::kJavaScript;
      if (title.empty()) title = fs::path(id).filename().string();
      d = {std::move(id), std::move(title), content, DocumentKind::kCode, language};
      break;
    }
  }
  if (is_blank(d.text) && !titled) return std::nullopt;
  return d;
}

void load_text(const std::string& name, const std::string& content, LoadedSource& into) {
  const std::string ext = lower(fs::path(name).extension().string());
  if (ext == ".jsonl") {
    std::istringstream in(content);
    for_each_jsonl_record(in, name, into.problems, [&](const nlohmann::json& j, std::string id, std::size_t line_no) {
      if (auto why = document_id_problem(id)) {
        into.problems.push_back({name, line_no, "\"_id\" " + quote_document_id(id) + " is not a valid document id: " + *why});
        return;
      }
      SourceDocument d{std::move(id), json_string_field(j, "title"), json_string_field(j, "text"),
                       DocumentKind::kNarrative, CodeLanguage::kNone};
      // A title alone is a document (half of CACM's records are a title and no abstract).
      if (is_blank(d.text) && is_blank(d.title)) {
        into.problems.push_back({name, line_no, "empty document '" + d.id + "' (no title and no text)"});
        return;
      }
      into.documents.push_back(std::move(d));
    });
    return;
  }
  if (auto why = document_id_problem(name)) {
    // Quoted: the name itself may hold the newline or escape sequence that is the problem.
    into.problems.push_back({quote_document_id(name), 0, "the file name is not a valid document id: " + *why});
    return;
  }
  const auto format = format_of_name(name);
  if (!format) {
    into.problems.push_back({name, 0, "unsupported file type '" + ext + "'"});
    return;
  }
  auto d = make_document(name, "", content, *format, is_faq_name(name));
  if (!d) {
    into.problems.push_back({name, 0, "empty document"});
    return;
  }
  into.documents.push_back(std::move(*d));
}

LoadedSource load_path(const std::string& path, const LoaderOptions& options) {
  LoadedSource out;
  std::error_code ec;
  std::vector<fs::path> files;
  const fs::path root(path);
  if (fs::is_directory(root, ec)) {
    for (auto it = fs::recursive_directory_iterator(root, fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      const std::string leaf = it->path().filename().string();
      if (!leaf.empty() && leaf[0] == '.') {
        if (it->is_directory(ec)) it.disable_recursion_pending();
        continue;
      }
      if (it->is_regular_file(ec)) files.push_back(it->path());
    }
    std::sort(files.begin(), files.end());
  } else {
    files.push_back(root);
  }
  std::size_t done = 0;
  for (const auto& f : files) {
    if (options.on_file && done > 0) options.on_file(done, files.size());
    ++done;
    // The id: the path below the root directory, or for a single file its name (an absolute or
    // "../" path would not be a valid id, graph/document_id.h).
    const std::string name = fs::is_directory(root, ec) ? fs::relative(f, root, ec).string() : f.filename().string();
    const auto size = fs::file_size(f, ec);
    if (ec) {
      out.problems.push_back({f.string(), 0, "cannot read: " + ec.message()});
      ec.clear();
      continue;
    }
    if (size > options.max_file_bytes) {
      out.problems.push_back({f.string(), 0, "larger than the " + std::to_string(options.max_file_bytes) + "-byte limit"});
      continue;
    }
    std::ifstream in(f, std::ios::binary);
    if (!in) {
      out.problems.push_back({f.string(), 0, "cannot open for reading"});
      continue;
    }
    std::stringstream buf;
    buf << in.rdbuf();
    load_text(name, buf.str(), out);
  }
  if (options.on_file) options.on_file(files.size(), files.size());
  return out;
}

}  // namespace sluice::retrieval
