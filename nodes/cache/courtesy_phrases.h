// The phrases of the courtesy rule (question_courtesy.h), kept apart from the rule that applies
// them: greetings and thanks that open a message, pleasantry clauses, request frames, closing
// courtesy, and the words the rule tests one at a time. Patterns are written compactly ("(a|b c)"
// one alternative, "[a|b]" optional) and expanded once, longest first, so that "thank you so
// much" is taken whole before "thank you". Lower-case ASCII; the typographic apostrophe is read
// as '. Internal to nodes/cache. Thread-safe (built once, then read).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace sluice::cache::courtesy {

using Phrase = std::vector<std::string>;

// Greetings and thanks that open a message, each closed by punctuation.
const std::vector<Phrase>& openers();
// Pleasantries that open a clause of their own, taken up to the clause's punctuation when it
// ends within kClauseWords words and all its further words are pleasantry_word()s.
const std::vector<Phrase>& clause_openers();
inline constexpr std::size_t kClauseWords = 8;
bool pleasantry_word(const std::string& w);
// "but", "so", "anyway", "and": a word that joins a stripped clause to the question.
bool joining_word(const std::string& w);
// A bare "hi", "hello" or "hey", which may run straight into the question.
bool bare_greeting(const Phrase& p);
// Requests wrapped around a question; what follows the frame is the question.
const std::vector<Phrase>& frames();
// Courtesy that closes a message.
const std::vector<Phrase>& closers();
// Words a question starts with (a bare greeting counts only before one).
bool starts_question(const std::string& w);

}  // namespace sluice::cache::courtesy
