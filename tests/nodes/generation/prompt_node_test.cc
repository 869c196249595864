// The `prompt` node: passages from a real knowledge base (embed, bm25, dense, fuse) laid out
// with numbered citations behind a byte-stable system part; limits, no hits, broken hits, and
// configuration errors, including through the pipeline loader and the node registry.
#include "nodes/generation/prompt_node.h"
#include "tests/support/scoped_env.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <optional>

#include "graph/batch.h"
#include "graph/node_registry.h"
#include "graph/spec_loader.h"
#include "tests/support/error_message.h"
#include "tests/support/test_models.h"

namespace sluice {
void register_generation_nodes(NodeRegistry& registry);
}

namespace sluice::generation {

using namespace sluice::inference;
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

class NullSink final : public ResponseSink {
 public:
  void on_token(std::string_view) override {}
  void on_complete(const Request&) override {}
};

std::shared_ptr<retrieval::KnowledgeBase> docs_kb() {
  retrieval::KnowledgeBaseOptions o;
  o.lsa.dimensions = 8;
  auto kb = std::make_shared<retrieval::KnowledgeBase>(o);
  kb->upsert({{"cache.md", "Caching", "The semantic cache is invalidated when the knowledge base version changes."},
              {"ingest.md", "Ingest", "Ingest re-embeds only changed documents and swaps the index atomically."},
              {"http.md", "HTTP", "The server streams answers with server-sent events."}});
  return kb;
}

// The prompt node's options as a pipeline file with `config` gets them (schema defaults applied).
PromptNodeOptions options_from_yaml(const std::string& config) {
  const std::string yaml = "name: p\nnodes:\n  - name: prompt\n    kind: prompt\n    config: " + config + "\n";
  const LoadedSpec spec = load_spec_text(yaml, "p.yaml");
  return prompt_options_from(spec.pipeline.nodes(0).prompt(), spec.base_dir);
}

RequestPtr chat(std::uint64_t id, const std::string& question) {
  RequestInput in;
  in.kind = RequestInput::Kind::kChat;
  in.messages = {{"user", question}};
  return std::make_shared<Request>(id, in, std::make_shared<NullSink>());
}

RequestPtr completion(std::uint64_t id, const std::string& question) {
  RequestInput in;
  in.kind = RequestInput::Kind::kCompletion;
  in.prompt = question;
  return std::make_shared<Request>(id, in, std::make_shared<NullSink>());
}

// Runs the retrieval branches and fuse over `kb`, then the prompt node.
void retrieve_then_prompt(const std::shared_ptr<retrieval::KnowledgeBase>& kb, PromptNode& prompt, Batch& batch) {
  ManualClock clock;
  retrieval::EmbedNode(kb).process(batch);
  retrieval::Bm25Node(kb, 100).process(batch);
  retrieval::DenseNode(kb, 100, &clock).process(batch);
  retrieval::FuseNode(kb, retrieval::RetrieveOptions{}).process(batch);
  prompt.process(batch);
}

std::string prompt_of(const Request& r) {
  auto p = r.attachment<const CitedPromptDraft>(kPromptKey);
  return p ? p->render().flat() : "<no prompt attachment>";
}

std::vector<Citation> citations_of(const Request& r) {
  auto c = r.attachment<std::vector<Citation>>(kCitationsKey);
  return c ? *c : std::vector<Citation>{};
}

TEST(PromptNode, SystemPartIsByteStableAcrossRequestsWithDifferentPassages) {
  auto kb = docs_kb();
  ManualClock clock;
  const PromptNodeOptions options = options_from_yaml("{chat_template: chatml}");
  PromptNode node(options, &clock);
  Batch batch;
  batch.requests = {chat(1, "when is the cache invalidated"), chat(2, "how does ingest swap the index"),
                    completion(3, "when is the cache invalidated"), completion(4, "how does ingest swap the index")};
  retrieve_then_prompt(kb, node, batch);

  const std::string chat_prefix =
      "<|im_start|>system\n" + options.layout.system + "<|im_end|>\n<|im_start|>user\n[1] ";
  const std::string a = prompt_of(*batch.requests[0]), b = prompt_of(*batch.requests[1]);
  EXPECT_THAT(a, StartsWith(chat_prefix));
  EXPECT_THAT(b, StartsWith(chat_prefix));
  ASSERT_FALSE(citations_of(*batch.requests[0]).empty());
  ASSERT_FALSE(citations_of(*batch.requests[1]).empty());
  EXPECT_NE(citations_of(*batch.requests[0])[0].doc_id, citations_of(*batch.requests[1])[0].doc_id);
  EXPECT_THAT(a, HasSubstr("[1] Caching\nThe semantic cache is invalidated"));
  EXPECT_THAT(b, HasSubstr("[1] Ingest\nIngest re-embeds"));
  // The question comes last, then the assistant's turn opens.
  EXPECT_THAT(a, ::testing::EndsWith("Question: when is the cache invalidated\nAnswer:<|im_end|>\n<|im_start|>assistant\n"));

  // Completions are raw model text: plain layout, the same system bytes first.
  const std::string plain_prefix = options.layout.system + "\n\n[1] ";
  EXPECT_THAT(prompt_of(*batch.requests[2]), StartsWith(plain_prefix));
  EXPECT_THAT(prompt_of(*batch.requests[3]), StartsWith(plain_prefix));
  EXPECT_THAT(prompt_of(*batch.requests[2]), ::testing::EndsWith("Question: when is the cache invalidated\nAnswer:"));
}

TEST(PromptNode, CitationsAreNumberedInRankOrder) {
  auto kb = docs_kb();
  const auto gen = kb->current();
  ASSERT_EQ(gen->chunks().size(), 3u);
  auto hits = std::make_shared<retrieval::RetrievalHits>();
  for (retrieval::DocIndex c : {2u, 0u, 1u}) hits->hits.push_back({c, 1.0f});
  auto r = completion(1, "q");
  r->attach<const retrieval::KbSnapshot>(retrieval::kSnapshotKey, gen);
  r->attach(retrieval::kHitsKey, hits);
  ManualClock clock;
  PromptNode node(options_from_yaml("{chat_template: plain}"), &clock);
  Batch batch;
  batch.requests = {r};
  node.process(batch);

  const auto cites = citations_of(*r);
  ASSERT_EQ(cites.size(), 3u);
  const std::string text = prompt_of(*r);
  std::size_t previous = 0;
  for (int i = 0; i < 3; ++i) {
    const auto& chunk = gen->chunks()[hits->hits[i].chunk];
    EXPECT_EQ(cites[i].number, i + 1);
    EXPECT_EQ(cites[i].doc_id, chunk.doc_id);
    EXPECT_EQ(cites[i].title, chunk.title);
    EXPECT_EQ(cites[i].end, chunk.end);
    const std::size_t at = text.find("[" + std::to_string(i + 1) + "] " + chunk.title + "\n" + chunk.text);
    ASSERT_NE(at, std::string::npos) << text;
    EXPECT_GT(at, previous);
    previous = at;
  }
}

TEST(PromptNode, MaxPassagesAndMaxPassageCharsBoundThePrompt) {
  auto kb = docs_kb();
  ManualClock clock;
  PromptNode node(options_from_yaml("{chat_template: plain, max_passages: 2, max_passage_chars: 12}"), &clock);
  Batch batch;
  batch.requests = {completion(1, "when is the cache invalidated")};
  retrieve_then_prompt(kb, node, batch);
  const auto& r = *batch.requests[0];
  EXPECT_EQ(citations_of(r).size(), 2u);
  const std::string text = prompt_of(r);
  EXPECT_THAT(text, HasSubstr("[1] Caching\nThe semantic...\n\n[2] "));
  EXPECT_EQ(text.find("[3] "), std::string::npos) << text;
}

TEST(PromptNode, NoHitsSaysSoAndCitesNothing) {
  auto kb = docs_kb();
  ManualClock clock;
  PromptNode node(options_from_yaml("{chat_template: llama2, system: S}"), &clock);
  Batch batch;
  auto without = chat(1, "anything?");  // no retrieval ran: no hits attachment
  auto empty = chat(2, "anything?");    // retrieval found nothing
  empty->attach<const retrieval::KbSnapshot>(retrieval::kSnapshotKey, kb->current());
  empty->attach(retrieval::kHitsKey, std::make_shared<retrieval::RetrievalHits>());
  batch.requests = {without, empty};
  node.process(batch);
  for (const auto& r : batch.requests) {
    EXPECT_EQ(prompt_of(*r),
              "[INST] <<SYS>>\nS\n<</SYS>>\n\nNo passages were found.\n\nQuestion: anything?\nAnswer: [/INST]");
    ASSERT_NE(r->attachment<std::vector<Citation>>(kCitationsKey), nullptr);
    EXPECT_TRUE(citations_of(*r).empty());
    EXPECT_TRUE(r->active());
  }
}

TEST(PromptNode, AHitOutsideThePinnedGenerationFailsOnlyThatRequest) {
  auto kb = docs_kb();
  auto bad = completion(1, "q");
  bad->attach<const retrieval::KbSnapshot>(retrieval::kSnapshotKey, kb->current());
  auto hits = std::make_shared<retrieval::RetrievalHits>();
  hits->hits.push_back({999u, 1.0f});
  bad->attach(retrieval::kHitsKey, hits);
  auto good = completion(2, "q");
  ManualClock clock;
  PromptNode node(options_from_yaml("{chat_template: plain}"), &clock);
  Batch batch;
  batch.requests = {bad, good};
  node.process(batch);
  EXPECT_TRUE(bad->done());
  EXPECT_EQ(bad->status().code, StatusCode::kInternal);
  EXPECT_THAT(bad->status().message,
              HasSubstr("prompt: retrieval hit 1 (chunk 999) is not in the request's pinned knowledge-base generation"));
  EXPECT_TRUE(good->active());
  EXPECT_NE(good->attachment<const CitedPromptDraft>(kPromptKey), nullptr);
}

TEST(PromptNode, SchemaDefaultsArriveWithRealLineBreaks) {
  const PromptNodeOptions o = options_from_yaml("{chat_template: zephyr}");
  EXPECT_EQ(o.layout.passage_template, "[{{n}}] {{title}}\n{{text}}\n\n");
  EXPECT_EQ(o.layout.question_template, "Question: {{question}}\nAnswer:");
  EXPECT_EQ(o.layout.no_passages, "No passages were found.\n\n");
  EXPECT_THAT(o.layout.system, StartsWith("Answer the question using only the numbered passages."));
  EXPECT_EQ(o.layout.max_passages, 4u);
  EXPECT_EQ(o.layout.max_passage_chars, 2000u);
  EXPECT_EQ(o.chat_template, ChatTemplate::kZephyr);
}


// The message prompt_options_from refuses `config` with.
std::string config_error(const std::string& config) {
  return inference::testing::invalid_argument_message([&] { options_from_yaml(config); });
}

TEST(PromptNode, ConfigErrorsNameTheField) {
  EXPECT_THAT(config_error("{chat_template: plain, passage_template: '{{n}} {{body}}'}"),
              StartsWith("passage_template: unknown placeholder '{{body}}'"));
  EXPECT_EQ(config_error("{chat_template: plain, question_template: 'Answer:'}"),
            "question_template: must contain {{question}}");
  EXPECT_THAT(config_error("{chat_template: mistral}"), StartsWith("chat_template: unknown chat template 'mistral'"));
  {
    // No model anywhere: nothing generates, so auto is plain (the default pipeline without SLUICE_MODEL).
    sluice::testing::ScopedEnv no_model("SLUICE_MODEL", nullptr);
    EXPECT_EQ(options_from_yaml("{}").chat_template, ChatTemplate::kPlain);
  }
  EXPECT_THAT(config_error("{model: /nonexistent/m.gguf}"), StartsWith("model: /nonexistent/m.gguf"));
}

TEST(PromptNode, AutoReadsTheModelFilesTemplate) {
  const std::string path = (std::filesystem::temp_directory_path() / "sluice_prompt_chatml.gguf").string();
  auto writer = inference::testing::tiny_llama_writer();
  writer.add_string("tokenizer.chat_template", "{% for m in messages %}{{'<|im_start|>' + m['role']}}{% endfor %}");
  writer.write(path);
  EXPECT_EQ(options_from_yaml("{model: " + path + "}").chat_template, ChatTemplate::kChatml);
  {
    sluice::testing::ScopedEnv model("SLUICE_MODEL", path.c_str());
    EXPECT_EQ(options_from_yaml("{}").chat_template, ChatTemplate::kChatml);
  }
  std::filesystem::remove(path);

  const std::string stories = inference::testing::shared_model("stories260K.gguf");
  if (std::filesystem::exists(stories)) {
    EXPECT_EQ(options_from_yaml("{model: " + stories + "}").chat_template, ChatTemplate::kPlain);
  }
}

TEST(PromptNode, RegisteredAsAKindThatNeedsHitsAndAddsPrompt) {
  NodeRegistry registry;
  register_generation_nodes(registry);
  const NodeKind* kind = registry.find("prompt");
  ASSERT_NE(kind, nullptr);
  EXPECT_EQ(kind->needs, FactSet{"hits"});
  EXPECT_EQ(kind->adds, FactSet{"prompt"});
  EXPECT_FALSE(kind->async);
  NodeSpec spec;
  spec.mutable_prompt()->set_chat_template("nope");
  // An unloaded spec has no schema defaults: the empty passage template is refused first.
  EXPECT_EQ(inference::testing::invalid_argument_message([&] { kind->factory(spec, NodeContext{}); }),
            "passage_template: must contain {{n}}");
}

}  // namespace
}  // namespace sluice::generation
