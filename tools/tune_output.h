// SPDX-License-Identifier: Apache-2.0
#pragma once
// Whether symmem-tune will be able to write its table, asked before the measurement (which can take
// an hour) rather than after it.
#include <string>

namespace symmem {

// "" when a file can be created or replaced at `path`, else why not ("directory /x: No such file or
// directory", "/tmp is a directory"). Creates nothing.
std::string tuneOutputProblem(const std::string& path);

}  // namespace symmem
