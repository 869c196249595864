// QueryClassifier: is a query an exact lookup (leans on BM25) or a natural-language question
// (leans on dense)? Deliberately simple and explainable; the rules, in order:
//   exact lookup when the query has
//     - a quoted phrase ("..." or '...'),
//     - a token mixing letters and digits or containing _ :: / . between word characters
//       (error codes, identifiers, versions, paths: ERR_42, v2.3, foo::bar, src/main.cc),
//     - a camelCase or ALL-CAPS token of 2+ letters (APIs, acronyms: getUser, HNSW),
//     - a number of 3+ digits (ids, codes, years),
//     - or at most 2 words and no question word;
//   otherwise natural language.
// Pure; thread-safe.
#pragma once

#include <string_view>

namespace sluice::retrieval {

enum class QueryType { kExactLookup, kNaturalLanguage };
const char* query_type_name(QueryType t);

QueryType classify_query(std::string_view query);

}  // namespace sluice::retrieval
