// without_courtesy (nodes/cache/question_courtesy.h): greetings, thanks, pleasantry clauses and
// request frames come off; a question about ability, a greeting that is a word of the question, and a text left too
// short stay as written.
#include <gtest/gtest.h>

#include "nodes/cache/cache_key.h"
#include "nodes/cache/question_courtesy.h"

namespace sluice::cache {
namespace {

TEST(QuestionCourtesy, GreetingsFramesAndThanksComeOff) {
  EXPECT_EQ(without_courtesy("Hello! Could you please tell me how long the onboarding call lasts? Thanks."),
            "How long the onboarding call lasts?");
  EXPECT_EQ(without_courtesy("Thanks so much! One more thing: how do I print a shipping label?"),
            "How do I print a shipping label?");
  EXPECT_EQ(without_courtesy("How do I unsubscribe from the newsletter? Thanks in advance!"),
            "How do I unsubscribe from the newsletter?");
  EXPECT_EQ(without_courtesy("Hi Sam, how do I add a team member?"), "How do I add a team member?");
  EXPECT_EQ(without_courtesy("Hey how do I add a team member"), "How do I add a team member");
  EXPECT_EQ(without_courtesy("Good morning, I need to know how to add a team member."), "How to add a team member?");
  EXPECT_EQ(without_courtesy("Would it be possible for you to explain what a hash table is?"), "What a hash table is?");
  EXPECT_EQ(without_courtesy("How do I clear the cache in Chrome, please?"), "How do I clear the cache in Chrome?");
  EXPECT_EQ(without_courtesy("Quick question - how many vacation days do we get?"), "How many vacation days do we get?");
}

TEST(QuestionCourtesy, WhatARequestAskedForIsAQuestion) {
  // The frame's full stop becomes a question mark; a bare "please" leaves an instruction.
  EXPECT_EQ(without_courtesy("Kindly advise how to reset MFA for a user."), "How to reset MFA for a user?");
  EXPECT_EQ(without_courtesy("I\xE2\x80\x99" "d appreciate it if you could tell me how to export a report to PDF."),
            "How to export a report to PDF?");
  EXPECT_EQ(without_courtesy("Please summarise this article."), "Summarise this article.");
}

TEST(QuestionCourtesy, QuestionsAboutAbilityAndWordsOfTheQuestionStay) {
  for (const char* kept : {"Can you export to PDF?", "Is it possible to export a report to PDF?",
                           "Could I cancel my order after it ships?", "Hello world in C: how do I compile it?",
                           "Hi-res images: how do I export them?", "Thank you notes: what should they say?",
                           "Hi, thanks", "Could you tell me?", "How do I reset my password?", ""}) {
    EXPECT_EQ(without_courtesy(kept), kept) << kept;
  }
}

// A pleasantry with a clause of its own comes off up to its punctuation, with a "but" that joins
// it to the question; a clause that names a subject the question may lean on stays.
TEST(QuestionCourtesy, PleasantryClausesComeOffAndClausesWithASubjectStay) {
  EXPECT_EQ(without_courtesy("Thank you for your quick reply. How do I reset my password?"), "How do I reset my password?");
  EXPECT_EQ(without_courtesy("Hi there, hope you're doing well. How do I reset my password?"), "How do I reset my password?");
  EXPECT_EQ(without_courtesy("Hi, sorry for the basic question, but how do I add a user?"), "How do I add a user?");
  EXPECT_EQ(without_courtesy("Hello, I have a question. How do I reset my password?"), "How do I reset my password?");
  EXPECT_EQ(without_courtesy("Hey folks - quick one: where are the logs?"), "Where are the logs?");
  EXPECT_EQ(without_courtesy("Please help: my build fails with error 137"), "My build fails with error 137");
  for (const char* kept : {"Quick question about Redis: how do I enable it?",
                           "I have a question about invoices. How do I download one?",
                           "Thanks for the help with the API earlier! How do I rotate keys?",
                           "Sorry for the delay on the migration, but how do I undo it?", "Thanks for the help!"}) {
    EXPECT_EQ(without_courtesy(kept), kept) << kept;
  }
}

TEST(QuestionCourtesy, TheSemanticQuestionIsTheWhitespaceNormalisedTextWithoutCourtesy) {
  EXPECT_EQ(semantic_question_text("  Hi team,   could you tell me   how to   reset my router?  "),
            "How to reset my router?");
}

}  // namespace
}  // namespace sluice::cache
