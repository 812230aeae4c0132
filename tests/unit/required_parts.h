// SPDX-License-Identifier: Apache-2.0
#pragma once
// Skips for tests that need a part the build can leave out on purpose (cmake/RequiredParts.cmake):
// each names the option, so a skipped test says how to build it in.
#include <gtest/gtest.h>

#ifdef SYMMEM_HAVE_HWLOC
#define SYMMEM_SKIP_WITHOUT_HWLOC() static_cast<void>(0)
#define SYMMEM_SKIP_WITH_HWLOC() GTEST_SKIP() << "built with hwloc (SYMMEM_HWLOC=ON): this checks the build without it"
#else
#define SYMMEM_SKIP_WITHOUT_HWLOC() GTEST_SKIP() << "built with -DSYMMEM_HWLOC=OFF: no hwloc, so hwloc XML is refused"
#define SYMMEM_SKIP_WITH_HWLOC() static_cast<void>(0)
#endif
