// The question inside its courtesy: "Hello! Could you please tell me how long the onboarding
// call lasts? Thanks." asks what "How long the onboarding call lasts?" asks, but USE-lite scores
// the two 0.81 apart from "How long does the onboarding call last?", below the semantic cache's
// threshold. So the cache embeds and verifies the question with its wrapping taken off:
//
//   leading greetings and thanks, each closed by , ! . : ; ? or a spaced dash ("Hi team,", "Thanks so
//     much!", "One more thing:", "Sorry to bother you,");
//   pleasantry clauses up to their punctuation, when every word of them is a pleasantry ("Thank
//     you for your quick reply.", "Hope you're doing well,", "Sorry for the basic question, but");
//     one that names a subject stays ("Quick question about Redis: how do I enable it?");
//   then one leading request frame: "please", "kindly", "(could|can|would|will) you [please]
//     (tell me | let me know | explain [to me] | advise [me] [on] | show me | help me)",
//     "would you mind (telling me | explaining | letting me know | showing me)", "would it be
//     possible [for you] to (tell me | explain | ...)", "I'd (like | love) to know", "I'd
//     appreciate it if you could ...", "I need to know", "I was wondering [if you could tell
//     me]", "do you know", "kindly advise", "please advise";
//   trailing "please" and thanks ("..., please?", "... Thanks in advance!").
//
// Only wrapping is removed: a frame that asks about ability ("Can you export to PDF?", "Is it
// possible to export ...") stays, and a text whose remainder would be under two words is
// returned as it was. The first letter of what remains is capitalised, as a question starts,
// and what a frame asked for ends with a question mark (USE-lite weighs the closing mark:
// "How to export a report to PDF." scores 0.75 against "How do I export a report to PDF?", and
// 0.95 with a '?'); a bare "please" leaves an instruction, whose mark is kept.
// Pure; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace sluice::cache {

std::string without_courtesy(std::string_view question);

}  // namespace sluice::cache
