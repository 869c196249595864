// The message of the std::invalid_argument a call throws, for tests that compare refusals
// exactly; "(accepted)" when it throws nothing.
#pragma once

#include <stdexcept>
#include <string>

namespace sluice::inference::testing {

template <class Call>
std::string invalid_argument_message(Call&& call) {
  try {
    call();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace sluice::inference::testing
