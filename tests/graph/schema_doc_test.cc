// docs/pipelines.md embeds the generated schema reference; it must match the schema.
#include "graph/schema_doc.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace sluice {
namespace {

TEST(SchemaDoc, PipelinesMarkdownMatchesTheSchema) {
  std::ifstream in(std::string(SLUICE_SOURCE_DIR) + "/docs/pipelines.md");
  ASSERT_TRUE(in) << "docs/pipelines.md is missing";
  std::stringstream ss;
  ss << in.rdbuf();
  std::string doc = ss.str();
  std::string begin = "<!-- schema:begin -->\n", end = "<!-- schema:end -->\n";
  auto b = doc.find(begin), e = doc.find(end);
  ASSERT_NE(b, std::string::npos);
  ASSERT_NE(e, std::string::npos);
  EXPECT_EQ(doc.substr(b + begin.size(), e - b - begin.size()), schema_reference_markdown())
      << "run scripts/gen-docs to regenerate the schema reference in docs/pipelines.md";
}

TEST(SchemaDoc, EveryFieldHasAReason) {
  std::string md = schema_reference_markdown();
  EXPECT_EQ(md.find("|  |\n"), std::string::npos) << "a field without a doc string in the schema:\n" << md;
}

}  // namespace
}  // namespace sluice
