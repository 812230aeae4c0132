// SPDX-License-Identifier: Apache-2.0
// The communicator's name from its creation call equals NCCL's commHash. Expected values: NCCL
// 2.29.7's own getHash / eatHash / digestHash (src/include/bitops.h), run on these inputs.
#include "core/comm_identity.h"

#include <gtest/gtest.h>

#include <array>
#include <cstring>

namespace {

using symmem::childCommIdentity;
using symmem::commIdentityFromUniqueId;

TEST(CommIdentity, FromAUniqueIdIsNcclsHash) {
  std::array<unsigned char, symmem::kNcclUniqueIdBytes> id{};
  EXPECT_EQ(commIdentityFromUniqueId(id.data()), 0xcc976ec6c24bb53cull);
  for (size_t i = 0; i < id.size(); ++i) id[i] = static_cast<unsigned char>(i * 37 + 11);
  EXPECT_EQ(commIdentityFromUniqueId(id.data()), 0x3002dcd1bbe6653dull);
  // Every byte counts, the last one too.
  id.back() ^= 1;
  EXPECT_NE(commIdentityFromUniqueId(id.data()), 0x3002dcd1bbe6653dull);
}

TEST(CommIdentity, OfASplitChildIsNcclsHash) {
  EXPECT_EQ(childCommIdentity(0x0123456789abcdefull, 1, 0), 0xf95d58ffb5dcaee2ull);
  EXPECT_EQ(childCommIdentity(0x0123456789abcdefull, 1, 7), 0x3728b1e9e4365853ull);
  EXPECT_EQ(childCommIdentity(0x0123456789abcdefull, 3, -1), 0x4a5f79277df975e7ull);
  EXPECT_EQ(childCommIdentity(0xfedcba9876543210ull, 3, 7), 0xd54749f366f9a6e7ull);
  // A shrink: count 0, color 0.
  EXPECT_EQ(childCommIdentity(0x0123456789abcdefull, 0, 0), 0x2b082141913f2bc1ull);
  EXPECT_EQ(childCommIdentity(0xfedcba9876543210ull, 0, 0), 0xf77654e4e8d9dddeull);
}

// Each input moves the name: two splits of one parent, two colors of one split, two parents.
TEST(CommIdentity, ChildrenOfOneParentDiffer) {
  const uint64_t parent = 0x0123456789abcdefull;
  EXPECT_NE(childCommIdentity(parent, 1, 0), childCommIdentity(parent, 2, 0));
  EXPECT_NE(childCommIdentity(parent, 1, 0), childCommIdentity(parent, 1, 1));
  EXPECT_NE(childCommIdentity(parent, 1, 0), childCommIdentity(parent + 1, 1, 0));
}

}  // namespace
