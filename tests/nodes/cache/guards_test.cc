#include <gtest/gtest.h>

#include "nodes/cache/semantic_guards.h"

namespace sluice::cache {
namespace {

std::optional<Guard> compare(const char* a, const char* b) {
  return guard_mismatch(question_features(a), question_features(b));
}

struct Pair {
  const char* a;
  const char* b;
};

// Paraphrases every guard must let through.
TEST(SemanticGuards, ParaphrasesPassEveryGuard) {
  const Pair pairs[] = {
      {"How do I enable dark mode?", "How can I turn on dark mode?"},
      {"How do I enable Dark Mode?", "how can i switch on dark mode"},
      {"Why doesn't my build work?", "Why does my build not work?"},
      {"What is the limit of 5 GB per file?", "Is there a 5GB limit for each file?"},
      {"How do I upload a file to S3?", "What's the way to upload files into S3?"},
      {"Can I use two GPUs?", "Is it possible to use 2 GPUs?"},
      {"What changed in March 2024?", "What was changed in March of 2024?"},
      {"Which plan is cheaper?", "Which plan is the cheaper one?"},
      {"How do I install Python on Windows?", "How can I install Python on Windows?"},
      {"What does error 404 mean?", "What is the meaning of error 404?"},
  };
  for (const auto& p : pairs) EXPECT_FALSE(compare(p.a, p.b).has_value()) << p.a << " | " << p.b << ": " << guard_name(*compare(p.a, p.b));
}

struct Refusal {
  const char* a;
  const char* b;
  Guard guard;
};

// Pairs that ask different things: each refused by the guard named.
TEST(SemanticGuards, EachGuardRefusesWhatItGuards) {
  const Refusal refusals[] = {
      {"How do I enable dark mode?", "How do I disable dark mode?", Guard::kAntonym},
      {"How do I turn on notifications?", "How do I turn off notifications?", Guard::kAntonym},
      {"How do I upload a file?", "How do I download a file?", Guard::kAntonym},
      {"How do I add a user?", "How do I remove a user?", Guard::kAntonym},
      {"Should I restart the server?", "Should I not restart the server?", Guard::kNegation},
      {"Does the free plan include backups?", "Doesn't the free plan include backups?", Guard::kNegation},
      {"Can I store 5 GB?", "Can I store 50 GB?", Guard::kNumber},
      {"Is the limit 10 requests per second?", "Is the limit ten requests per minute?", Guard::kNumber},
      {"What happened on Monday?", "What happened on Tuesday?", Guard::kDate},
      {"What were the sales last week?", "What were the sales last month?", Guard::kDate},
      {"How fast is ModelX?", "How fast is ModelY?", Guard::kEntity},
      {"How do I install it on Windows?", "How do I install it on Linux?", Guard::kEntity},
      {"Does gpt-4 support images?", "Does gpt-3 support images?", Guard::kNumber},
      {"Which plan is cheaper?", "Which plan is more expensive?", Guard::kComparative},
      {"What is the fastest option?", "What is the slowest option?", Guard::kComparative},
  };
  for (const auto& r : refusals) {
    const auto g = compare(r.a, r.b);
    ASSERT_TRUE(g.has_value()) << r.a << " | " << r.b;
    EXPECT_EQ(*g, r.guard) << r.a << " | " << r.b << ": " << guard_name(*g);
    EXPECT_EQ(compare(r.b, r.a), g) << "guards are symmetric";
  }
}

TEST(SemanticGuards, FeaturesReadNumbersWithUnitsAndNumberWords) {
  const auto f = question_features("Do 1,000 users need 2 GB and two cores?");
  EXPECT_NE(std::find(f.numbers.begin(), f.numbers.end(), "1000 user"), f.numbers.end());
  EXPECT_NE(std::find(f.numbers.begin(), f.numbers.end(), "2 gb"), f.numbers.end());
  EXPECT_NE(std::find(f.numbers.begin(), f.numbers.end(), "2 core"), f.numbers.end());
  // "5GB" = "5 GB"; "mins" = "minutes"; "daily" = "every day".
  EXPECT_FALSE(compare("Can I store 5GB?", "Can I store 5 GB?").has_value());
  EXPECT_FALSE(compare("Does it time out after 5 mins?", "Does it time out after 5 minutes?").has_value());
  EXPECT_FALSE(compare("How do I run a job daily?", "How do I run a job every day?").has_value());
}

// Rewordings the guards must let through: a word on one side only, politeness that carries a
// negation, greetings, a month name that is a verb, synonyms, typos.
TEST(SemanticGuards, OneSidedWordsPolitenessAndTyposPass) {
  const Pair pairs[] = {
      {"How do I restore a file from the bin?", "Can I get back a deleted file from the bin?"},
      {"If it's not too much trouble, how do I set up SSO?", "How do I set up SSO?"},
      {"Good morning, how do I add a team member?", "How do I add a team member?"},
      {"May I ask how to change the interface language?", "How do I change the interface language?"},
      {"How do I remove a webhook?", "How do I delete a webhook?"},
      {"How do I instal the CLI?", "How do I install the CLI?"},
      {"What is the capital of Australia?", "Which city is Australia's capital?"},
      {"How do I insert a page break in Word?", "How do I insert a page break in Microsoft Word?"},
      {"What does error 404 mean?", "What is the meaning of error 404?"},
      {"What does store: redis change?", "What changes with store: redis?"},
      {"Error: connection refused. What now?", "What do I do about connection refused errors?"},  // a label, not a setting
      {"How do I fetch the result of a job?", "How can I retrieve the result of a job?"},
      // Misspelt words whose right spelling folds to a synonym (access = permission, configure
      // = set up) are compared as written; two letters swapped are one edit.
      {"How do I acess the billing page?", "How do I access the billing page?"},
      {"How do I configure the firewall?", "How do I cofnigure the firewall?"},
      {"How do I recieve invoices by email?", "How do I receive invoices by email?"},
  };
  for (const auto& p : pairs) EXPECT_FALSE(compare(p.a, p.b).has_value()) << p.a << " | " << p.b << ": " << guard_name(*compare(p.a, p.b));
}

TEST(SemanticGuards, SwapsOrdinalsPrefixesAndTimesAreRefused) {
  const Refusal refusals[] = {
      {"How do I enable logging for the gateway?", "How do I enable caching for the gateway?", Guard::kTopic},
      // Two real words two edits apart, one of them folded (access = permission): not a typo.
      {"How do I access the audit report?", "How do I assess the audit report?", Guard::kTopic},
      {"How do I pin a message?", "How do I unpin a message?", Guard::kAntonym},
      {"How do I activate the plugin?", "How do I deactivate the plugin?", Guard::kAntonym},
      {"How do I get the first element of a list?", "How do I get the last element of a list?", Guard::kAntonym},
      {"What were sales in the first half of 2024?", "What were sales in the second half of 2024?", Guard::kNumber},
      {"How much protein is in 5 ounces of chicken?", "How much protein is in 5 pounds of chicken?", Guard::kNumber},
      {"What were the errors between 9 and 10 am?", "What were the errors between 9 and 10 pm?", Guard::kNumber},
      {"How many tickets were closed this sprint?", "How many tickets were closed last sprint?", Guard::kDate},
      {"What changed in May?", "What changed in June?", Guard::kDate},
      {"How do I sync Google Drive?", "How do I sync Google Photos?", Guard::kEntity},
      // A setting's value: "all" is a function word elsewhere, here it is the answer's subject.
      {"What does the invalidate: cited setting do?", "What does the invalidate: all setting do?", Guard::kEntity},
      // Words of its own on both sides, three on one, outnumbering the two shared.
      {"How do I give an environment variable a default in a pipeline file?", "How can I validate a pipeline file?", Guard::kTopic},
  };
  for (const auto& r : refusals) {
    const auto g = compare(r.a, r.b);
    ASSERT_TRUE(g.has_value()) << r.a << " | " << r.b;
    EXPECT_EQ(*g, r.guard) << r.a << " | " << r.b << ": " << guard_name(*g);
    EXPECT_EQ(compare(r.b, r.a), g) << "guards are symmetric";
  }
}

}  // namespace
}  // namespace sluice::cache
