// Document ids: the one rule for what may name a document in a knowledge base, and a safe way
// to quote a refused id in a message.
//
// A document id is at most kMaxDocumentIdBytes (512) bytes of well-formed UTF-8 (RFC 3629: no
// overlong forms, no surrogates, nothing past U+10FFFF) with no control character (C0
// U+0000-U+001F including NUL, DEL U+007F, C1 U+0080-U+009F), that is not empty, does not
// start with '/' and has no path segment (between '/'s) equal to "." or "..".
//
// Why: ids are stored, echoed in every retrieval answer and citation, written to logs, and
// clients (and `sluice ingest`, whose ids are file paths) treat them as relative paths. NUL
// and control characters break C strings, terminals and log lines; invalid UTF-8 cannot be
// carried in JSON; an unbounded id is a memory and response-size lever. '/', "." and ".." are
// how a path navigates: a client that joins the id to a directory would leave it through an
// absolute path or a ".." segment. "." is refused with them, since it only ever spells another
// id ("a/./b" for "a/b"). Everything else is allowed: backslashes, spaces, empty segments
// ("a//b", "a/": joined to a directory they cannot leave it), leading dots (".profile",
// "...") and any printable Unicode.
//
// Who checks: every way into a knowledge base. The HTTP source (connectors/http/
// retrieval_api.cc) refuses a bad id in `POST /v1/documents` (written or deleted) with a 400
// naming it; the knowledge base's DocumentStore (nodes/retrieval/node/
// knowledge_base_documents.cc) refuses it again for any other connector; the file loaders
// (nodes/retrieval/kb/loaders.cc) skip a file or JSONL record whose id breaks the rule and
// report it. Ids already stored in a knowledge base file are not re-checked when it is opened.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace sluice {

inline constexpr std::size_t kMaxDocumentIdBytes = 512;

// nullopt when `id` is a valid document id; otherwise why not, as a phrase that completes
// "... is not a valid document id: ", e.g. "it is 513 bytes, over the limit of 512".
std::optional<std::string> document_id_problem(std::string_view id);

// `id` quoted for a message, safe whatever its bytes: between double quotes, '"' and '\' are
// escaped, control characters appear as \uXXXX and bytes that are not UTF-8 as \xNN, and an
// id longer than 64 bytes is cut there with "..." and its length in bytes. The result is
// printable UTF-8.
std::string quote_document_id(std::string_view id);

}  // namespace sluice
