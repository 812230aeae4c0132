// SPDX-License-Identifier: Apache-2.0
#pragma once
// The code-hook fixture libraries (tests/hook_fixture), where they exist (x86-64 builds), and whether
// this build can hook at all.
#include <string>

#include "plugin/x86_decoder.h"

#if __has_include("symmem/hook_fixture_paths.h") && defined(__x86_64__)
#include "symmem/hook_fixture_paths.h"
#define SYMMEM_HAVE_HOOK_FIXTURE 1
#else
#define SYMMEM_HAVE_HOOK_FIXTURE 0
#endif

namespace symmem::testing {

// Why code-hook tests cannot run here, or "" when they can. A build without the Zydis headers has no
// code hooks (the plugin says so and rebinds GOT slots); a build with them must find the library, so a
// missing one is a failure in the tests, not a reason to skip.
inline std::string codeHooksUnavailable() {
  if (!SYMMEM_HAVE_HOOK_FIXTURE) return "code hooks are x86-64 only and need the hook fixture";
  std::string why;
  if (!X86Decoder::load("", &why) && why.find("built without") != std::string::npos) return why;
  return "";
}

}  // namespace symmem::testing
