// POST /v1/documents and POST /v1/retrieve end to end over loopback: a real Pipeline with the
// retrieval nodes (embed, bm25 and dense in parallel, fuse, answer) over a fresh knowledge base
// directory, behind an HttpSource built from the spec's `kind: http` source, as `sluice run`
// wires it. Each test uses its own directory: knowledge bases are shared per directory per
// process (kb/shared_knowledge_bases.h).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>

#include "nodes/retrieval/kb/shared_knowledge_bases.h"
#include "tests/connectors/http/served_pipeline.h"
#include "tests/connectors/http/test_client.h"

namespace sluice {
void register_basic_nodes(NodeRegistry& registry);
void register_retrieval_nodes(NodeRegistry& registry);
}  // namespace sluice

namespace sluice::http::testing {
namespace {

using nlohmann::json;

const char* kRetrievalNodes = R"(nodes:
  - {name: embed, kind: embed, config: {knowledge_base: "%KB%"}}
  - {name: bm25, kind: bm25, config: {knowledge_base: "%KB%", candidates: 20}}
  - {name: dense, kind: dense, config: {knowledge_base: "%KB%", candidates: 20}}
  - {name: fuse, kind: fuse, config: {knowledge_base: "%KB%", top_k: 5}}
  - {name: answer, kind: answer, config: {knowledge_base: "%KB%", passages: 3, max_sentences: 2}}
edges:
  - {from: api, to: embed}
  - {from: embed, to: bm25}
  - {from: embed, to: dense}
  - {from: bm25, to: fuse}
  - {from: dense, to: fuse}
  - {from: fuse, to: answer}
)";

const char* kTemplateNodes = R"(nodes:
  - name: answer
    kind: template
    config: {text: "You asked {{input}}", token_interval: 0s}
edges:
  - {from: api, to: answer}
)";

std::string fresh_directory() {
  std::string pattern = (std::filesystem::temp_directory_path() / "sluice-docs-test-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  return pattern;
}

std::string with_kb(const std::string& nodes, const std::string& dir) {
  std::string text = loopback_spec_head("kb") + nodes;
  for (std::size_t p; (p = text.find("%KB%")) != std::string::npos;) text.replace(p, 4, dir);
  return text;
}

void register_nodes(NodeRegistry& registry) {
  register_basic_nodes(registry);
  register_retrieval_nodes(registry);
}

// The retrieval pipeline over a fresh knowledge base directory (or the template pipeline,
// which reads none), with loopback helpers.
struct Served {
  explicit Served(bool with_knowledge_base = true)
      : kb_dir(with_knowledge_base ? fresh_directory() : ""),
        served(with_knowledge_base ? with_kb(kRetrievalNodes, kb_dir) : loopback_spec_head("plain") + kTemplateNodes,
               register_nodes),
        source(served.source),
        pipeline(served.pipeline) {}
  ~Served() {
    if (!kb_dir.empty()) std::filesystem::remove_all(kb_dir);
  }
  ClientResponse post(const std::string& path, const std::string& body) const {
    TestClient client(source->port());
    client.send(TestClient::post(path, body));
    return client.read_response();
  }
  // The ranked chunks' document ids for `query`.
  std::vector<std::string> retrieve(const std::string& query) const {
    auto r = post("/v1/retrieve", json{{"query", query}}.dump());
    EXPECT_EQ(r.status, 200) << r.body;
    std::vector<std::string> ids;
    const json body = json::parse(r.body);
    for (const auto& c : body["chunks"]) ids.push_back(c["doc_id"]);
    return ids;
  }

  const std::string kb_dir;
  ServedPipeline served;
  const std::unique_ptr<HttpSource>& source;
  const std::unique_ptr<Pipeline>& pipeline;
};

json doc(const std::string& id, const std::string& text, const std::string& kind = "") {
  json d{{"id", id}, {"text", text}};
  if (!kind.empty()) d["kind"] = kind;
  return d;
}

json three_documents() {
  return json{{"documents",
               {doc("otters.md", "# Sea otters\n\nSea otters hold hands while they sleep so they do not drift apart. "
                                 "They crack shellfish open with rocks."),
                doc("volcano.txt", "Volcanoes\nA volcano erupts when magma rises through the crust and escapes as "
                                   "lava, ash and gas."),
                doc("bread", "<html><title>Baking bread</title><p>Yeast ferments the sugar, so the dough rises before "
                             "it is baked.</p></html>",
                    "html")}}};
}

TEST(HttpDocuments, AddThenUnchangedThenUpdateThenDelete) {
  Served s;
  auto r = s.post("/v1/documents", three_documents().dump());
  ASSERT_EQ(r.status, 200) << r.body;
  json stats = json::parse(r.body);
  EXPECT_EQ(stats["object"], "knowledge_base.update");
  EXPECT_EQ(stats["added"], 3);
  EXPECT_EQ(stats["updated"], 0);
  EXPECT_GE(stats["chunks_embedded"].get<int>(), 3);
  EXPECT_EQ(stats["chunks_total"], stats["chunks_embedded"]);
  const std::uint64_t v1 = stats["version"];
  EXPECT_GE(v1, 1u);

  // The same documents again: nothing re-embedded, no new version.
  r = s.post("/v1/documents", three_documents().dump());
  ASSERT_EQ(r.status, 200) << r.body;
  stats = json::parse(r.body);
  EXPECT_EQ(stats["unchanged"], 3);
  EXPECT_EQ(stats["added"], 0);
  EXPECT_EQ(stats["chunks_embedded"], 0);
  EXPECT_EQ(stats["version"], v1);

  // One changed text: updated, a new version.
  json changed{{"documents", {doc("volcano.txt", "Volcanoes\nA volcano erupts when pressure from gas in the magma "
                                                 "becomes too great for the rock above.")}}};
  r = s.post("/v1/documents", changed.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  stats = json::parse(r.body);
  EXPECT_EQ(stats["updated"], 1);
  EXPECT_EQ(stats["unchanged"], 0);
  EXPECT_GE(stats["chunks_embedded"].get<int>(), 1);
  EXPECT_EQ(stats["version"], v1 + 1);

  // Delete one (and an id that was never there, which is not counted).
  r = s.post("/v1/documents", R"({"delete":["otters.md","never-added.md"]})");
  ASSERT_EQ(r.status, 200) << r.body;
  stats = json::parse(r.body);
  EXPECT_EQ(stats["deleted"], 1);
  EXPECT_EQ(stats["version"], v1 + 2);
  for (const auto& id : s.retrieve("why do sea otters hold hands")) EXPECT_NE(id, "otters.md");
}

TEST(HttpDocuments, QueryAfterAddFindsTheNewDocument) {
  Served s;
  ASSERT_EQ(s.post("/v1/documents", three_documents().dump()).status, 200);
  auto r = s.post("/v1/documents",
                  json{{"documents", {doc("glaciers.md", "# Glaciers\n\nGlaciers carve U-shaped valleys as the moving "
                                                         "ice grinds the bedrock beneath it.")}}}
                      .dump());
  ASSERT_EQ(r.status, 200) << r.body;
  auto ids = s.retrieve("how do glaciers carve valleys");
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids[0], "glaciers.md");

  // The chat endpoint answers from it too, with a citation.
  r = s.post("/v1/chat/completions",
             R"({"model":"sluice","messages":[{"role":"user","content":"how do glaciers carve valleys"}]})");
  ASSERT_EQ(r.status, 200) << r.body;
  const json body = json::parse(r.body);
  const std::string answer = body["choices"][0]["message"]["content"];
  EXPECT_NE(answer.find("grinds the bedrock beneath it. [1]"), std::string::npos) << answer;
  EXPECT_EQ(body["sluice_sources"][0]["n"], 1) << r.body;
  EXPECT_EQ(body["sluice_sources"][0]["doc_id"], "glaciers.md") << r.body;
}

TEST(HttpDocuments, RetrieveReturnsRankedChunksWithEachPathsScoreAndRank) {
  Served s;
  ASSERT_EQ(s.post("/v1/documents", three_documents().dump()).status, 200);
  auto r = s.post("/v1/retrieve", R"({"query":"what makes the dough rise"})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.header("x-request-id").rfind("retr-", 0), 0u);
  json body = json::parse(r.body);
  EXPECT_EQ(body["object"], "retrieval");
  EXPECT_EQ(body["version"], s.pipeline->document_stores().front()->version());
  ASSERT_FALSE(body["chunks"].empty());
  const json& top = body["chunks"][0];
  EXPECT_EQ(top["rank"], 1);
  EXPECT_EQ(top["doc_id"], "bread");
  EXPECT_EQ(top["title"], "Baking bread");
  EXPECT_NE(top["text"].get<std::string>().find("Yeast ferments"), std::string::npos);
  EXPECT_LT(top["begin"].get<int>(), top["end"].get<int>());
  for (const char* field : {"score", "bm25_rank", "bm25_score", "dense_rank", "dense_score"}) {
    EXPECT_TRUE(top.contains(field)) << field;
  }
  double previous = top["score"];
  for (const auto& c : body["chunks"]) {
    EXPECT_LE(c["score"].get<double>(), previous);
    previous = c["score"];
  }
}

// A document may be only its title (as a BEIR record with no text is for `sluice ingest`).
TEST(HttpDocuments, ADocumentOfOnlyATitleIsAcceptedFoundAndQuoted) {
  Served s;
  auto r = s.post("/v1/documents", R"({"documents":[{"id":"2","title":"Extraction of Roots by Repeated Subtractions"},)"
                                   R"({"id":"3","title":"Matrix Program Schemes","text":""}]})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(s.retrieve("extraction of roots").at(0), "2");
  r = s.post("/v1/chat/completions",
             R"({"model":"sluice","messages":[{"role":"user","content":"repeated subtractions for roots"}]})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find("Extraction of Roots by Repeated Subtractions [1]"), std::string::npos) << r.body;
}

// Led by BM25 at weight 1 (here by a bar no knowledge base reaches), the pipeline's fuse node
// reads no dense hits, so embed and dense skip the work (nodes/retrieval/node/dense_demand.h):
// the answer has no dense ranks. At weight 0.999 the fuse node reads them and they are there.
TEST(HttpDocuments, ABm25LedHybridAnswersWithoutRunningTheDenseBranch) {
  json documents{{"documents", json::array()}};
  const char* topics[] = {"otters sleep holding hands", "volcanoes erupt magma and ash", "yeast makes the dough rise",
                          "tides follow the moon", "bees dance to point at flowers", "glaciers carve valleys"};
  for (int i = 0; i < 60; ++i) {  // 50 chunks or more: the path agreement is measured (and is below 1)
    documents["documents"].push_back(doc("d" + std::to_string(i), std::string(topics[i % 6]) + " and " +
                                                                      topics[(i / 6 + i) % 6] + ", note " + std::to_string(i) + "."));
  }
  for (const std::string weight : {"1", "0.999"}) {
    const std::string dir = fresh_directory();
    std::string nodes = kRetrievalNodes;
    const std::string fuse = "top_k: 5}";
    nodes.replace(nodes.find(fuse), fuse.size(), "top_k: 5, min_path_agreement: 1, low_agreement_bm25_weight: " + weight + "}");
    ServedPipeline served(with_kb(nodes, dir), register_nodes);
    TestClient add(served.source->port());
    add.send(TestClient::post("/v1/documents", documents.dump()));
    ASSERT_EQ(add.read_response().status, 200);
    TestClient client(served.source->port());
    client.send(TestClient::post("/v1/retrieve", R"({"query":"what makes the dough rise"})"));
    const ClientResponse r = client.read_response();
    ASSERT_EQ(r.status, 200) << r.body;
    const json body = json::parse(r.body);
    EXPECT_NEAR(body["fusion"]["bm25_weight"].get<double>(), std::stod(weight), 1e-6) << "led by BM25";
    ASSERT_EQ(body["chunks"].size(), 5u);
    int dense_ranked = 0;
    for (const auto& c : body["chunks"]) {
      EXPECT_NE(c["text"].get<std::string>().find("dough"), std::string::npos) << c.dump();
      dense_ranked += c["dense_rank"].get<int>() > 0;
    }
    if (weight == "1") {
      EXPECT_EQ(dense_ranked, 0) << "the dense branch ran though no fuse node reads it: " << r.body;
    } else {
      EXPECT_GT(dense_ranked, 0) << "a fuse node at weight 0.999 reads the dense hits: " << r.body;
    }
    std::filesystem::remove_all(dir);
  }
}

TEST(HttpDocuments, RetrieveBadBodiesAre400NamingTheField) {
  Served s;
  struct Case {
    const char* body;
    const char* param;
    const char* says;
  };
  for (const Case& c : {Case{"{", "", "not valid JSON"}, Case{"{}", "query", "'query' is required"},
                        Case{R"({"query":7})", "query", "must be a string"},
                        Case{R"({"query":"  "})", "query", "must not be empty"},
                        Case{R"({"query":"x","top":3})", "top", "unknown field 'top'"},
                        // Once an abort of the whole server (nlohmann's out_of_range escaped).
                        Case{R"({"query":"x","zz":1e400})", "zz", "number overflow parsing '1e400'"}}) {
    auto r = s.post("/v1/retrieve", c.body);
    EXPECT_EQ(r.status, 400) << c.body;
    json e = json::parse(r.body)["error"];
    EXPECT_EQ(e["param"].is_null() ? "" : e["param"].get<std::string>(), c.param) << c.body;
    EXPECT_NE(e["message"].get<std::string>().find(c.says), std::string::npos) << e.dump();
  }
}

struct BadBody {
  const char* name;
  std::string body;
  const char* param;  // "" for the body as a whole
  const char* says;
};

class HttpDocumentsBadInput : public ::testing::TestWithParam<BadBody> {};

// Every bad body is a 400 naming the field; the knowledge base keeps what it had.
TEST_P(HttpDocumentsBadInput, Is400NamingTheFieldAndLosesNothing) {
  Served s;
  ASSERT_EQ(s.post("/v1/documents", three_documents().dump()).status, 200);
  const std::uint64_t version = s.pipeline->document_stores().front()->version();
  auto r = s.post("/v1/documents", GetParam().body);
  EXPECT_EQ(r.status, 400) << r.body;
  json e = json::parse(r.body)["error"];
  EXPECT_EQ(e["type"], "invalid_request_error");
  EXPECT_EQ(e["param"].is_null() ? "" : e["param"].get<std::string>(), GetParam().param) << e.dump();
  EXPECT_NE(e["message"].get<std::string>().find(GetParam().says), std::string::npos) << e.dump();
  EXPECT_EQ(s.pipeline->document_stores().front()->version(), version);
  auto ids = s.retrieve("why do sea otters hold hands");
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids[0], "otters.md");
}

const std::string kGood = R"({"id":"new.md","text":"fresh text"})";

const std::vector<BadBody> kBadBodies = {
        BadBody{"MalformedJson", R"({"documents":[)", "", "not valid JSON"},
        BadBody{"NotAnObject", "[1,2]", "", "must be a JSON object"},
        BadBody{"NumberOverflow", R"({"documents":[{"id":"b.md","text":"t","rank":1e400}]})", "documents[0].rank",
                "number overflow"},
        BadBody{"NothingToDo", "{}", "", "nothing to do"},
        BadBody{"DocumentsNotAnArray", R"({"documents":{"id":"a"}})", "documents", "must be an array"},
        BadBody{"DocumentNotAnObject", R"({"documents":["a.md"]})", "documents[0]", "must be an object"},
        BadBody{"MissingId", R"({"documents":[{"text":"t"}]})", "documents[0].id", "is required"},
        BadBody{"EmptyId", R"({"documents":[{"id":"","text":"t"}]})", "documents[0].id", "must not be empty"},
        BadBody{"MissingText", R"({"documents":[)" + kGood + R"(,{"id":"b.md"}]})", "documents[1].text", "is required"},
        BadBody{"BlankText", R"({"documents":[{"id":"b.md","text":" \n "}]})", "documents[0].text", "must not be empty"},
        BadBody{"TextNotAString", R"({"documents":[{"id":"b.md","text":42}]})", "documents[0].text",
                "must be a string, got an integer"},
        BadBody{"TitleNotAString", R"({"documents":[{"id":"b.md","text":"t","title":["x"]}]})", "documents[0].title",
                "must be a string, got an array"},
        BadBody{"UnknownTopLevelField", R"({"documents":[)" + kGood + R"(],"upsert":true})", "upsert",
                "unknown field 'upsert'"},
        BadBody{"UnknownDocumentField", R"({"documents":[{"id":"b.md","text":"t","titel":"x"}]})",
                "documents[0].titel", "unknown field 'documents[0].titel'"},
        BadBody{"DuplicateId", R"({"documents":[)" + kGood + "," + kGood + "]}", "documents[1].id", "repeats documents[0]"},
        BadBody{"WrittenAndDeleted", R"({"documents":[)" + kGood + R"(],"delete":["new.md"]})", "delete[0]",
                "also in documents"},
        BadBody{"DeleteNotStrings", R"({"delete":[1]})", "delete[0]", "must be a string"},
        // Checked by the knowledge base before it changes anything (the first document would be fine).
        BadBody{"UnknownKind", R"({"documents":[)" + kGood + R"(,{"id":"b","text":"t","kind":"pdf"}]})",
                "documents[1].kind", "'pdf' is not one of txt, md, html, faq, code"},
        BadBody{"LanguageWithoutCode", R"({"documents":[{"id":"b","text":"t","kind":"md","language":"python"}]})",
                "documents[0].language", "applies to kind 'code' only"},
        BadBody{"CodeWithoutLanguage", R"({"documents":[{"id":"b","text":"int f();","kind":"code"}]})",
                "documents[0].language", "is required for kind 'code'"},
        BadBody{"HtmlWithoutText", "{\"documents\":[{\"id\":\"b.html\",\"text\":\"<p> </p>\"}]}", "documents[0].text",
                "empty once the HTML is converted"},
        // Ids that break graph/document_id.h, quoted in the message with their escapes.
        BadBody{"IdWithNul", R"({"documents":[{"id":"a\u0000b","text":"t"}]})", "documents[0].id",
                R"('documents[0].id' "a\u0000b" is not a valid document id: it contains the control character U+0000 at byte 1)"},
        BadBody{"IdWithEscapeSequence", R"({"documents":[{"id":"\u001b[2Jx","text":"t"}]})", "documents[0].id",
                R"("\u001B[2Jx" is not a valid document id: it contains the control character U+001B at byte 0)"},
        BadBody{"IdWithDel", R"({"documents":[{"id":"x\u007f","text":"t"}]})", "documents[0].id", "U+007F at byte 1"},
        BadBody{"IdWithC1Control", R"({"documents":[{"id":"x\u0085","text":"t"}]})", "documents[0].id", "U+0085 at byte 1"},
        BadBody{"IdOver512Bytes", R"({"documents":[{"id":")" + std::string(513, 'x') + R"(","text":"t"}]})",
                "documents[0].id", "it is 513 bytes, over the limit of 512"},
        BadBody{"IdAbsolute", R"({"documents":[{"id":"/etc/passwd","text":"t"}]})", "documents[0].id",
                R"("/etc/passwd" is not a valid document id: it starts with '/')"},
        BadBody{"IdWithDotDot", R"({"documents":[{"id":"../../etc/passwd","text":"t"}]})", "documents[0].id",
                "'..' path segment"},
        BadBody{"IdWithDotSegment", R"({"documents":[{"id":"a/./b.md","text":"t"}]})", "documents[0].id",
                "'.' path segment"},
        // The first document would be fine: nothing of the request is applied.
        BadBody{"SecondIdBad", R"({"documents":[)" + kGood + R"(,{"id":"a/../b","text":"t"}]})", "documents[1].id",
                R"('documents[1].id' "a/../b" is not a valid document id)"},
        BadBody{"DeletedIdBad", R"({"delete":["otters.md","../otters.md"]})", "delete[1]",
                R"('delete[1]' "../otters.md" is not a valid document id)"},
        BadBody{"DeletedIdWithNul", R"({"delete":["otters.md\u0000"]})", "delete[0]", "U+0000 at byte 9"}};

INSTANTIATE_TEST_SUITE_P(All, HttpDocumentsBadInput, ::testing::ValuesIn(kBadBodies),
                         [](const auto& info) { return std::string(info.param.name); });

// A 500 KB id: refused with code invalid_document_id, the message quoting only its start, and
// nothing stored. Before the rule it was stored and echoed back in every answer citing it.
TEST(HttpDocuments, HugeIdIsRefusedAndQuotedShort) {
  Served s;
  ASSERT_EQ(s.post("/v1/documents", three_documents().dump()).status, 200);
  const std::uint64_t version = s.pipeline->document_stores().front()->version();
  auto r = s.post("/v1/documents", json{{"documents", {doc(std::string(500 << 10, 'x') + ".md", "huge id")}}}.dump());
  ASSERT_EQ(r.status, 400) << r.body.substr(0, 300);
  EXPECT_LT(r.body.size(), 1024u);
  json e = json::parse(r.body)["error"];
  EXPECT_EQ(e["code"], "invalid_document_id");
  EXPECT_EQ(e["param"], "documents[0].id");
  EXPECT_NE(e["message"].get<std::string>().find("...\" (512003 bytes) is not a valid document id: it is 512003 bytes"),
            std::string::npos)
      << e.dump();
  EXPECT_EQ(s.pipeline->document_stores().front()->version(), version);
}

TEST(HttpDocuments, TooLargeBodyIs413BeforeItIsRead) {
  Served s;
  TestClient client(s.source->port());
  client.send("POST /v1/documents HTTP/1.1\r\nContent-Length: 2000000\r\n\r\n");
  auto r = client.read_response();
  EXPECT_EQ(r.status, 413);
  json e = json::parse(r.body)["error"];
  EXPECT_EQ(e["code"], "request_too_large");
  EXPECT_NE(e["message"].get<std::string>().find("max_body_bytes"), std::string::npos) << e.dump();
}

// One ingest at a time: while one runs (held in the knowledge base's before-swap hook), the
// event loop still answers, and a second ingest gets 429 with Retry-After.
TEST(HttpDocuments, SecondConcurrentIngestGets429AndTheLoopStaysFree) {
  Served s;
  auto kb = retrieval::shared_knowledge_base(s.kb_dir);
  std::mutex mu;
  std::condition_variable cv;
  bool entered = false, release = false;
  kb->set_before_swap_hook([&] {
    std::unique_lock<std::mutex> lock(mu);
    entered = true;
    cv.notify_all();
    cv.wait(lock, [&] { return release; });
  });
  TestClient first(s.source->port());
  first.send(TestClient::post("/v1/documents", three_documents().dump()));
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return entered; }));
  }
  TestClient probe(s.source->port());
  probe.send(TestClient::get("/healthz"));
  EXPECT_EQ(probe.read_response().status, 200);
  auto second = s.post("/v1/documents", json{{"documents", {doc("late.md", "late text")}}}.dump());
  EXPECT_EQ(second.status, 429) << second.body;
  EXPECT_GE(std::stoi(second.header("retry-after")), 1);
  EXPECT_EQ(json::parse(second.body)["error"]["code"], "ingest_in_progress");
  probe.send(TestClient::get("/metrics"));
  EXPECT_NE(probe.read_response().body.find("sluice_http_ingests_running{source=\"api\"} 1"), std::string::npos);
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  auto r = first.read_response();
  kb->set_before_swap_hook(nullptr);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["added"], 3);
  // The refused document was not half-applied; once the runner is free, it goes in.
  auto again = s.post("/v1/documents", json{{"documents", {doc("late.md", "late text")}}}.dump());
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(json::parse(again.body)["added"], 1);
}

TEST(HttpDocuments, PipelineWithoutAKnowledgeBaseIs404) {
  Served s(false);
  for (const char* path : {"/v1/documents", "/v1/retrieve"}) {
    auto r = s.post(path, path == std::string("/v1/documents") ? three_documents().dump() : R"({"query":"q"})");
    EXPECT_EQ(r.status, 404) << path;
    json e = json::parse(r.body)["error"];
    EXPECT_EQ(e["code"], "no_knowledge_base");
    EXPECT_NE(e["message"].get<std::string>().find("no knowledge base"), std::string::npos) << e.dump();
  }
}

TEST(HttpDocuments, PipelineReadingTwoKnowledgeBasesIs409) {
  const std::string a = fresh_directory(), b = fresh_directory();
  std::string nodes = kRetrievalNodes;
  nodes.replace(nodes.rfind("%KB%"), 4, b);  // the answer node reads another knowledge base
  {
    ServedPipeline served(with_kb(nodes, a), register_nodes);
    EXPECT_EQ(served.pipeline->document_stores().size(), 2u);
    TestClient client(served.source->port());
    client.send(TestClient::post("/v1/documents", three_documents().dump()));
    auto r = client.read_response();
    EXPECT_EQ(r.status, 409);
    json e = json::parse(r.body)["error"];
    EXPECT_EQ(e["code"], "ambiguous_knowledge_base");
    EXPECT_NE(e["message"].get<std::string>().find(b), std::string::npos) << e.dump();
  }
  std::filesystem::remove_all(a);
  std::filesystem::remove_all(b);
}

TEST(HttpDocuments, DrainingRefusesNewIngests) {
  Served s;
  s.pipeline->drain();
  auto r = s.post("/v1/documents", three_documents().dump());
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(json::parse(r.body)["error"]["code"], "draining");
}

TEST(HttpDocuments, GetIsNotAllowed) {
  Served s;
  TestClient client(s.source->port());
  client.send(TestClient::get("/v1/documents"));
  auto r = client.read_response();
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(r.header("allow"), "POST");
}

}  // namespace
}  // namespace sluice::http::testing
