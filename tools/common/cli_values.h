// SPDX-License-Identifier: Apache-2.0
#pragma once
// Strict values for the tools' command lines (symmem-bench, -tune, -health, -report): the whole text is the
// value, with no sign, exponent, hex prefix, space or anything after it. Each parser returns "" when
// the text is valid, else one message naming the flag and the value.
#include <cstdint>
#include <string>
#include <vector>

#include "core/collective.h"

namespace symmem {

// A whole number from min to max: "200".
std::string parseCountArg(const std::string& flag, const std::string& text, int64_t min, int64_t max, int64_t& out);
// A size from min to max bytes: "8", "8B", "64K", "64KiB", "1M", "2GiB" (K = 1024; core's parseBytes).
std::string parseSizeArg(const std::string& flag, const std::string& text, uint64_t min, uint64_t max, uint64_t& out);
// A decimal percentage from min to below maxBelow: "5", "2.5", "5%"; `out` is the fraction (0.05).
std::string parsePercentArg(const std::string& flag, const std::string& text, double min, double maxBelow, double& out);

// A list of distinct whole numbers from 0 to max, comma-separated: "0,1,3" (--gpus).
std::string parseIndexListArg(const std::string& flag, const std::string& text, int max, std::vector<int>& out);

// "unknown option --x (symmem-bench --help lists the options)".
std::string unknownOptionMessage(const std::string& tool, const std::string& arg);
// The same with the nearest of `known` when it is close enough to be a typo of it:
// "unknown option --intervl (did you mean --interval? symmem-stat --help lists the options)".
std::string unknownOptionMessage(const std::string& tool, const std::string& arg,
                                 const std::vector<std::string>& known);

// The element types the measuring tools all-reduce: bfloat16, half and float.
bool measuredType(DataType type);
// One of them by core's names (dataTypeFromName: NCCL's "bfloat16", "half", "float" or the short "bf16",
// "fp16", "fp32"); the message names the values allowed, and the nearest one to a typo.
std::string parseMeasuredTypeArg(const std::string& flag, const std::string& text, DataType& out);

// What a tool's parser of its command line returns: the options (with their defaults where the
// command line gives none) and, when the command line is not valid, one message naming the flag and
// the value.
template <typename Options>
struct ArgsResult {
  Options options;
  std::string error;  // empty when the command line is valid
  bool ok() const { return error.empty(); }
};

}  // namespace symmem
