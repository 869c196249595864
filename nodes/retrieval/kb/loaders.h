// Loaders: files on disk -> SourceDocuments ready for chunking, one place that knows formats.
//
//   .txt .text .rst         narrative; title = first non-empty line
//   .md .markdown           narrative; title = first "# " heading, else first line
//   .html .htm              text only: <script>/<style> dropped, tags removed, block tags become
//                           paragraph breaks, common entities decoded; title = <title>
//   .c .cc .cpp .cxx .h .hh .hpp .py .js .mjs .cjs    code (one definition per chunk)
//   .jsonl                  BEIR corpus records {"_id","title","text"}, one document each
// A file whose name contains "faq" (any case) is chunked as FAQ. Document ids are the path
// relative to the ingested directory, or the file name when a single file is ingested (BEIR:
// the record's _id); an id that breaks the rule of graph/document_id.h (a control character
// or invalid UTF-8 in a file name, a 600-byte _id) skips its file or record as a problem.
// Problems (unreadable file, unsupported extension, invalid JSONL line with its line number,
// invalid id, empty document) are collected, never thrown, and the rest still loads. Files over
// `max_file_bytes` are reported and skipped (bounded memory).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "nodes/retrieval/chunk/chunker.h"
#include "nodes/retrieval/eval/beir_dataset.h"

namespace sluice::retrieval {

struct LoadedSource {
  std::vector<SourceDocument> documents;
  std::vector<LoadProblem> problems;
};

struct LoaderOptions {
  std::size_t max_file_bytes = 64ull << 20;  // 64 MiB: larger inputs are almost always mistakes
  // Called after each file (loaded or skipped) with (files done, files in all); for progress
  // display. Runs on the loading thread.
  std::function<void(std::size_t done, std::size_t total)> on_file;
};

// The single-document formats above (everything but .jsonl).
enum class TextFormat { kText, kMarkdown, kHtml, kCpp, kPython, kJavaScript };

// The format a file name's extension stands for; nullopt for .jsonl and unknown extensions.
std::optional<TextFormat> format_of_name(const std::string& name);
// Whether a name marks an FAQ file (its file name contains "faq", any case).
bool is_faq_name(const std::string& name);
// One document of a known format, as load_text builds it: HTML converted to text; the title
// from the text (or the file name for code) when `title` is empty; chunked as FAQ when `faq`
// (prose formats only). nullopt when the (converted) text is blank and no title was given (a
// given title with no text is a document of its title, one chunk).
std::optional<SourceDocument> make_document(std::string id, std::string title, const std::string& content,
                                            TextFormat format, bool faq);

// A file or a directory (recursive, sorted, hidden entries skipped).
LoadedSource load_path(const std::string& path, const LoaderOptions& options = {});
// One in-memory file; `name` decides the format by extension. Appends to `into`.
void load_text(const std::string& name, const std::string& content, LoadedSource& into);

// HTML to plain text (exposed for tests).
std::string html_to_text(const std::string& html, std::string* title = nullptr);

}  // namespace sluice::retrieval
