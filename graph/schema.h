// The pipeline schema the code is written against: version 1, Protobuf package `sluice.v1`
// (proto/sluice/*.proto), so C++ namespace sluice::v1. Code includes this header rather than the
// generated ones and names the messages unqualified inside namespace sluice; a later version
// would live beside it (sluice.v2) and this is the one line where the code picks one. Files on
// disk carry no version: a pipeline file is read as v1.
#pragma once

#include "sluice/pipeline.pb.h"  // imports every other schema file

namespace sluice {
using namespace v1;  // NOLINT(google-build-using-namespace): the schema version the code uses
}  // namespace sluice
