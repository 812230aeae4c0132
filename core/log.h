// SPDX-License-Identifier: Apache-2.0
#pragma once
// Logging through NCCL's own logger (NCCL_DEBUG / NCCL_DEBUG_SUBSYS apply), with a fixed prefix.
// Before NCCL hands us its logger (tools, tests), WARN goes to stderr and INFO/TRACE follow
// NCCL_DEBUG=INFO|TRACE. Notices (logNoticeOnce) are the one exception to "NCCL's logger decides":
// they go to stderr whatever NCCL_DEBUG says. The library never writes to stdout.
#include <cstdarg>
#include <functional>
#include <string>

namespace symmem {

// NCCL's levels and subsystem flags: ncclDebugLogLevel and ncclDebugLogSubSys in NCCL's
// src/include/nccl_common.h (docs/sources.md).
enum class LogLevel : int { None = 0, Version = 1, Warn = 2, Info = 3, Abort = 4, Trace = 5 };
enum LogSubsys : unsigned long {
  kLogInit = 0x1,
  kLogColl = 0x2,
  kLogP2p = 0x4,
  kLogEnv = 0x80,
  kLogTuning = 0x40,
  kLogAlloc = 0x100
};

using NcclLoggerFn = void (*)(int level, unsigned long flags, const char* file, int line, const char* fmt, ...);

// Installs NCCL's logger for the whole process (the first non-null one wins; NCCL passes the same
// function to every communicator).
void setNcclLogger(NcclLoggerFn fn);
// The logger installed above (null before NCCL handed one over). It lives in the libnccl that loaded
// the plugin, which makes it the way to tell which NCCL that was.
NcclLoggerFn ncclLogger();

// Test hook: every message (already formatted, without prefix) also goes here. Pass {} to remove.
using LogSink = std::function<void(LogLevel, const std::string&)>;
void setLogSinkForTesting(LogSink sink);

class Settings;

// SYMMEM_LOG: quiet, warn, info (default until the process's settings are read), trace. Checked
// before any formatting, so a per-call TRACE costs one load when off. quiet is warn without notices.
bool logLevelEnabled(LogLevel level);
void setLogDetail(const Settings& settings);

void logMessage(LogLevel level, unsigned long subsys, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 5, 6)));

// Same as WARN, but only the first time `key` is seen in this process.
void logWarnOnce(const std::string& key, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));

// A notice: one line "nccl-symmem: <text>" on stderr the first time `key` is seen in this process,
// whatever NCCL_DEBUG says (with NCCL_DEBUG unset, as in production, NCCL's logger prints nothing). For
// what an operator must see without asking: the plugin active (and with which table), or a fallback
// that defeats its purpose (code hooks refused, a driver too old). Keys name the cause, so a cause
// is said once per process however many communicators meet it. The text also goes to NCCL's logger
// at INFO. SYMMEM_LOG=quiet leaves stderr alone.
void logNoticeOnce(const std::string& key, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
// Whether notices reach stderr (false under SYMMEM_LOG=quiet).
bool noticesEnabled();

}  // namespace symmem

#define SYMMEM_WARN(...) \
  ::symmem::logMessage(::symmem::LogLevel::Warn, ::symmem::kLogInit, __FILE__, __LINE__, __VA_ARGS__)
#define SYMMEM_INFO(subsys, ...)                                                                 \
  do {                                                                                           \
    if (::symmem::logLevelEnabled(::symmem::LogLevel::Info))                                     \
      ::symmem::logMessage(::symmem::LogLevel::Info, (subsys), __FILE__, __LINE__, __VA_ARGS__); \
  } while (0)
#define SYMMEM_TRACE(subsys, ...)                                                                 \
  do {                                                                                            \
    if (::symmem::logLevelEnabled(::symmem::LogLevel::Trace))                                     \
      ::symmem::logMessage(::symmem::LogLevel::Trace, (subsys), __FILE__, __LINE__, __VA_ARGS__); \
  } while (0)
#define SYMMEM_WARN_ONCE(key, ...) ::symmem::logWarnOnce((key), __FILE__, __LINE__, __VA_ARGS__)
#define SYMMEM_NOTICE_ONCE(key, ...) ::symmem::logNoticeOnce((key), __VA_ARGS__)
