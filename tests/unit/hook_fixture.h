// SPDX-License-Identifier: Apache-2.0
#pragma once
// The code-hook fixture libraries (tests/hook_fixture), where they exist (x86-64 builds), and whether
// this build can hook at all.
#include <string>

#include "plugin/hooks/x86_decoder.h"

#if __has_include("symmem/hook_fixture_paths.h") && defined(__x86_64__)
#include "symmem/hook_fixture_paths.h"
#define SYMMEM_HAVE_HOOK_FIXTURE 1
#else
#define SYMMEM_HAVE_HOOK_FIXTURE 0
#endif

namespace symmem::testing {

// Why tests against the stand-in libnccl cannot run here, or "" when they can. The GOT-fallback tests
// need only this: they run in a build with -DSYMMEM_CODE_HOOKS=OFF too.
inline std::string hookFixtureUnavailable() {
  if (!SYMMEM_HAVE_HOOK_FIXTURE) return "code hooks are x86-64 only and need the hook fixture";
  return "";
}

// Why code-hook tests cannot run here, or "" when they can. A build with -DSYMMEM_CODE_HOOKS=OFF has
// no code hooks (the plugin says so and rebinds GOT slots): the reason names the option. A build with
// them must find the library, so a missing one is a failure in the tests, not a reason to skip.
inline std::string codeHooksUnavailable() {
  if (std::string fixture = hookFixtureUnavailable(); !fixture.empty()) return fixture;
  std::string why;
  if (!X86Decoder::load("", &why) && why == kCodeHooksOffReason) return why;
  return "";
}

}  // namespace symmem::testing
