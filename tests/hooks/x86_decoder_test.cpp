// SPDX-License-Identifier: Apache-2.0
// Where the code hooks' decoder looks for Zydis: beside the plugin first, then the loader's search.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "plugin/hooks/x86_decoder.h"

namespace symmem {
namespace {

TEST(X86DecoderSearch, NextToThePluginFirstThenTheSystem) {
  EXPECT_EQ(X86Decoder::searchOrder("", "/opt/venv/nccl_symmem/lib", "libZydis.so.4.0"),
            (std::vector<std::string>{"/opt/venv/nccl_symmem/lib/libZydis.so.4.0", "libZydis.so.4.0"}));
  // The loader could not name the plugin's directory: the system's search alone.
  EXPECT_EQ(X86Decoder::searchOrder("", "", "libZydis.so.4.0"), (std::vector<std::string>{"libZydis.so.4.0"}));
  // SYMMEM_DISASSEMBLER names the one library to load.
  EXPECT_EQ(X86Decoder::searchOrder("/x/libZydis.so", "/opt/lib", "libZydis.so.4.0"),
            (std::vector<std::string>{"/x/libZydis.so"}));
}

}  // namespace
}  // namespace symmem
