// The bodies of Sluice's knowledge-base endpoints. They are not OpenAI's, so validation is
// strict: besides wrong types and missing fields, unknown fields are refused (a misspelt
// "titel" must not silently drop the title). Every error is a 400 in the OpenAI error shape
// with `param` naming the field (json_body.h).
//
// POST /v1/documents  add or replace documents and delete others, as one change:
//   {"documents": [{"id": "guide.md",          required, a valid id, unique in the request
//                   "text": "...",              required, not blank
//                   "title": "...",             optional (else taken from the text)
//                   "kind": "md",               optional: txt | md | html | faq | code
//                   "language": "python"}],     optional, kind code only: c | cpp | python | javascript
//    "delete": ["old.md", ...]}                 valid ids; an id may not be both written and deleted
//   At least one of the two must be non-empty. The kinds are checked by the store (graph/
//   document_store.h), still before anything changes. An id that breaks the rule of
//   graph/document_id.h (empty, over 512 bytes, not UTF-8, a control character, a leading '/',
//   a '.' or '..' segment) is refused with code invalid_document_id and param documents[i].id
//   or delete[i], the id quoted safely (quote_document_id) in the message.
// POST /v1/retrieve   {"query": "..."}  (required, not blank)
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "connectors/http/openai_request.h"
#include "graph/document_store.h"

namespace sluice::http {

std::optional<ApiError> parse_documents_request(std::string_view body, DocumentChanges* out);

// The 400 for a change the store refused (DocumentProblem), naming documents[i].<field>.
ApiError document_problem_error(const DocumentProblem& problem);

// {"object":"knowledge_base.update","knowledge_base":..,"version":..,"added":..,"updated":..,
//  "unchanged":..,"deleted":..,"chunks_total":..,"chunks_embedded":..,"refitted":..,
//  "seconds":..,"skipped":[..]}
std::string documents_response(const DocumentChangeStats& stats, const std::string& store_name);

std::optional<ApiError> parse_retrieve_request(std::string_view body, std::string* query);

}  // namespace sluice::http
