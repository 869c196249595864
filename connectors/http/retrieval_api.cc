#include "connectors/http/retrieval_api.h"

#include <initializer_list>
#include <map>

#include "connectors/http/json_body.h"
#include "graph/document_id.h"
#include "graph/document_store.h"

namespace sluice::http {
namespace {

using nlohmann::json;

// Refuses any key of `obj` outside `known`, naming it as `at` + key.
std::optional<ApiError> check_fields(const json& obj, const std::string& at, std::initializer_list<const char*> known) {
  for (const auto& [key, value] : obj.items()) {
    bool ok = false;
    for (const char* k : known) ok = ok || key == k;
    if (ok) continue;
    std::string list;
    for (const char* k : known) list += (list.empty() ? "" : ", ") + std::string(k);
    ApiError e = invalid_value(at + key, "unknown field '" + at + key + "'; known fields: " + list);
    e.code = "unknown_field";
    return e;
  }
  return std::nullopt;
}

// A string field: absent or null leaves *out empty (and is an error when `required`).
std::optional<ApiError> read_string(const json& obj, const std::string& at, const char* field, bool required,
                                    std::string* out) {
  const std::string name = at + field;
  auto it = obj.find(field);
  if (it == obj.end() || it->is_null()) {
    if (required) return invalid_value(name, "'" + name + "' is required");
    return std::nullopt;
  }
  if (!it->is_string()) return wrong_type(name, "a string", *it);
  *out = it->get<std::string>();
  if (required && is_blank(*out)) return invalid_value(name, "'" + name + "' must not be empty");
  return std::nullopt;
}

// Refuses an id that breaks the document id rule (graph/document_id.h). The id is quoted by
// quote_document_id: it may hold NUL, control characters or 500 KB, none of which belongs in a
// message a client logs.
std::optional<ApiError> check_id(const std::string& param, const std::string& id) {
  const auto why = document_id_problem(id);
  if (!why) return std::nullopt;
  ApiError e = invalid_value(param, "'" + param + "' " + quote_document_id(id) + " is not a valid document id: " + *why +
                                        " (an id is at most " + std::to_string(kMaxDocumentIdBytes) +
                                        " bytes of UTF-8 without control characters, does not start with '/' and has no "
                                        "'.' or '..' path segment)");
  e.code = "invalid_document_id";
  return e;
}

std::optional<ApiError> read_documents(const json& body, std::vector<DocumentUpsert>* out) {
  auto it = body.find("documents");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_array()) return wrong_type("documents", "an array of objects", *it);
  std::map<std::string, std::size_t> first_at;
  for (std::size_t i = 0; i < it->size(); ++i) {
    const json& d = (*it)[i];
    const std::string at = "documents[" + std::to_string(i) + "].";
    if (!d.is_object()) return wrong_type("documents[" + std::to_string(i) + "]", "an object", d);
    if (auto e = check_fields(d, at, {"id", "title", "text", "kind", "language"})) return e;
    DocumentUpsert u;
    if (auto e = read_string(d, at, "id", true, &u.id)) return e;
    if (auto e = check_id(at + "id", u.id)) return e;
    if (auto e = read_string(d, at, "title", false, &u.title)) return e;
    // A document that is only its title (a BEIR record with no text) may leave text out.
    if (auto e = read_string(d, at, "text", /*required=*/is_blank(u.title), &u.text)) return e;
    if (auto e = read_string(d, at, "kind", false, &u.kind)) return e;
    if (auto e = read_string(d, at, "language", false, &u.language)) return e;
    if (auto [prev, fresh] = first_at.emplace(u.id, i); !fresh) {
      return invalid_value(at + "id", "'" + at + "id' '" + u.id + "' repeats documents[" + std::to_string(prev->second) +
                                          "]; send each document once");
    }
    out->push_back(std::move(u));
  }
  return std::nullopt;
}

std::optional<ApiError> read_deletes(const json& body, const std::vector<DocumentUpsert>& upserts,
                                     std::vector<std::string>* out) {
  auto it = body.find("delete");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_array()) return wrong_type("delete", "an array of document ids", *it);
  for (std::size_t i = 0; i < it->size(); ++i) {
    const std::string at = "delete[" + std::to_string(i) + "]";
    const json& id = (*it)[i];
    if (!id.is_string()) return wrong_type(at, "a string", id);
    std::string s = id.get<std::string>();
    if (s.empty()) return invalid_value(at, "'" + at + "' must not be empty");
    if (auto e = check_id(at, s)) return e;
    for (const auto& u : upserts) {
      if (u.id == s) {
        return invalid_value(at, "'" + at + "' '" + s +
                                     "' is also in documents; a request either writes or deletes a document");
      }
    }
    out->push_back(std::move(s));
  }
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> parse_documents_request(std::string_view body, DocumentChanges* out) {
  json doc;
  if (auto e = parse_json_object(body, &doc)) return e;
  if (auto e = check_fields(doc, "", {"documents", "delete"})) return e;
  if (auto e = read_documents(doc, &out->upserts)) return e;
  if (auto e = read_deletes(doc, out->upserts, &out->deletes)) return e;
  if (out->upserts.empty() && out->deletes.empty()) {
    return invalid_value("", "nothing to do: give 'documents' to add or replace and/or 'delete' with ids to remove");
  }
  return std::nullopt;
}

ApiError document_problem_error(const DocumentProblem& p) {
  const std::string field = "documents[" + std::to_string(p.index) + "]." + p.field;
  return invalid_value(field, "'" + field + "' " + p.message);
}

std::string documents_response(const DocumentChangeStats& s, const std::string& store_name) {
  json j{{"object", "knowledge_base.update"},
         {"knowledge_base", store_name},
         {"version", s.version},
         {"added", s.added},
         {"updated", s.updated},
         {"unchanged", s.unchanged},
         {"deleted", s.deleted},
         {"chunks_total", s.chunks_total},
         {"chunks_embedded", s.chunks_embedded},
         {"refitted", s.refitted},
         {"seconds", s.seconds},
         {"skipped", s.skipped}};
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::optional<ApiError> parse_retrieve_request(std::string_view body, std::string* query) {
  json doc;
  if (auto e = parse_json_object(body, &doc)) return e;
  if (auto e = check_fields(doc, "", {"query"})) return e;
  return read_string(doc, "", "query", true, query);
}

}  // namespace sluice::http
