// The headers nearly every test file includes, parsed once per build directory instead of once
// per test file (tests/CMakeLists.txt: every sluice_add_test target reuses sluice_test_pch's
// precompiled header). Parsing them was most of a test file's compile time: about 4 of 16 s
// with GCC at -O2, the longest part of scripts/test. Test files still include what they use;
// this list is only what is worth precompiling.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <variant>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <google/protobuf/message.h>
#include <nlohmann/json.hpp>

#include "proto/sluice/pipeline.pb.h"
