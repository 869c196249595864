// Kafka embedding jobs: OpenAI Batch lines with url /v1/embeddings through a worker whose
// pipeline has an `embeddings` node answer with the same body as POST /v1/embeddings (vectors
// equal to the encoder's own), and a body the endpoint refuses gets an error line naming the
// field (OpenAI's Batch output) and a dead letter with the reason and its original bytes, while
// the others are answered.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstring>
#include <string>

#include "inference/encoder/shared_encoders.h"
#include "tests/connectors/kafka/kafka_worker.h"
#include "tests/connectors/kafka/mock_kafka.h"
#include "tests/inference/encoder/encoder_fixture.h"

namespace sluice {

void register_embedding_nodes(NodeRegistry& registry);

namespace kafka {
namespace {

using json = nlohmann::json;
using std::chrono::milliseconds;

std::string embeddings_line(const std::string& custom_id, const json& body) {
  return json{{"custom_id", custom_id}, {"method", "POST"}, {"url", "/v1/embeddings"}, {"body", body}}.dump();
}

// One kafka source in front of an `embeddings` node configured by `config` (YAML flow map).
struct EmbeddingWorker : testing::KafkaWorker {
  EmbeddingWorker(const testing::MockKafka& kafka, const std::string& config)
      : KafkaWorker(register_embedding_nodes,
                    "name: embed-jobs\nsources:\n  - name: jobs\n    kind: kafka\n    config: {bootstrap: \"" +
                        kafka.bootstrap() + "\", group: embed-group, base_delay: 50ms, max_delay: 400ms}\n" +
                        "nodes:\n  - {name: embeddings, kind: embeddings, config: " + config +
                        "}\nedges:\n  - {from: jobs, to: embeddings}\n") {}
};

TEST(KafkaEmbeddings, JobsGetTheEncodersVectorsAndARefusedBodyIsDeadLettered) {
  SLUICE_REQUIRE_ENCODER();
  testing::MockKafka kafka;
  kafka.create_job_topics(2);
  EmbeddingWorker w(kafka, "{}");

  kafka.produce("sluice.jobs", "", embeddings_line("e-1", {{"model", "use-lite"}, {"input", {"How do I enable dark mode?", "Sea otters."}}}));
  kafka.produce("sluice.jobs", "", embeddings_line("e-2", {{"model", "use-lite"}, {"input", "x"}, {"encoding_format", "base64"}}));
  kafka.produce("sluice.jobs", "", embeddings_line("e-bad", {{"model", "use-lite"}, {"input", {1, 2, 3}}}));
  kafka.flush();
  const auto results = kafka.read("sluice.results", 3, milliseconds(20000));
  const auto dead = kafka.read("sluice.dlq", 1, milliseconds(20000));
  w.stop();

  ASSERT_EQ(results.size(), 3u);
  auto encoder = inference::shared_sentence_encoder(inference::default_encoder_path(), 1);
  std::vector<float> want(512);
  encoder->embed({"How do I enable dark mode?"}, want.data());
  for (const auto& r : results) {
    const json line = json::parse(r.value);
    if (line["custom_id"] == "e-bad") {
      EXPECT_TRUE(line["response"].is_null());
      EXPECT_EQ(line["error"]["code"], "unsupported");
      EXPECT_NE(line["error"]["message"].get<std::string>().find("'input' is a list of token ids"), std::string::npos);
      continue;
    }
    ASSERT_TRUE(line["response"].is_object()) << r.value.substr(0, 400);
    ASSERT_EQ(line["response"]["status_code"], 200) << r.value.substr(0, 300);
    const json& body = line["response"]["body"];
    EXPECT_EQ(body["object"], "list");
    EXPECT_EQ(body["model"], "use-lite");
    if (line["custom_id"] == "e-1") {
      ASSERT_EQ(body["data"].size(), 2u);
      for (size_t k = 0; k < 512; ++k) ASSERT_EQ(body["data"][0]["embedding"][k].get<float>(), want[k]) << k;
    } else {
      EXPECT_EQ(line["custom_id"], "e-2");
      EXPECT_EQ(inference::testing::base64_decode(body["data"][0]["embedding"].get<std::string>()).size(), 512u * 4);
    }
  }
  ASSERT_EQ(dead.size(), 1u);
  const json letter = json::parse(dead[0].value);
  EXPECT_EQ(letter["custom_id"], "e-bad");
  EXPECT_EQ(letter["reason"]["code"], "unsupported");
  EXPECT_NE(letter["original"].get<std::string>().find("\"input\":[1,2,3]"), std::string::npos) << dead[0].value;
}

// A worker whose embeddings node is off (optional, no model file) dead-letters embedding jobs
// with no_embeddings_node instead of running them through a pipeline that cannot answer them.
TEST(KafkaEmbeddings, AWorkerWithoutTheEncoderDeadLettersThem) {
  testing::MockKafka kafka;
  kafka.create_job_topics(1);
  EmbeddingWorker w(kafka, "{optional: true, model: /nonexistent/use-lite.gguf}");
  kafka.produce("sluice.jobs", "", embeddings_line("e-off", {{"model", "use-lite"}, {"input", "x"}}));
  kafka.flush();
  const auto dead = kafka.read("sluice.dlq", 1, milliseconds(20000));
  ASSERT_EQ(dead.size(), 1u);
  const json letter = json::parse(dead[0].value);
  EXPECT_EQ(letter["custom_id"], "e-off");
  EXPECT_EQ(letter["reason"]["code"], "no_embeddings_node") << dead[0].value;
}

}  // namespace
}  // namespace kafka
}  // namespace sluice
