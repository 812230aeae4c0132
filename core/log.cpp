// SPDX-License-Identifier: Apache-2.0
#include "core/log.h"
#include "core/settings.h"

#include <pthread.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>

namespace symmem {

namespace {
std::atomic<NcclLoggerFn> gNcclLogger{nullptr};

// What logging keeps between calls. Never destroyed: NCCL's and the application's exit handlers
// still log through the plugin after static destructors have run. Its locks are never inherited held
// by a forked child.
struct LogState {
  std::mutex sinkMutex;
  LogSink sink;
  std::mutex onceMutex;
  std::set<std::string> warnedOnce;
};
LogState& logState() {
  static LogState* const s = [] {
    auto* state = new LogState;
    pthread_atfork(
        [] {
          logState().sinkMutex.lock();
          logState().onceMutex.lock();
        },
        [] {
          logState().onceMutex.unlock();
          logState().sinkMutex.unlock();
        },
        [] {
          logState().onceMutex.unlock();
          logState().sinkMutex.unlock();
        });
    return state;
  }();
  return *s;
}

LogLevel stderrLevel() {
  static const LogLevel level = [] {
    const char* v = std::getenv("NCCL_DEBUG");
    if (v && strcasecmp(v, "TRACE") == 0) return LogLevel::Trace;
    if (v && strcasecmp(v, "INFO") == 0) return LogLevel::Info;
    return LogLevel::Warn;
  }();
  return level;
}

// The whole message, however long (a path of a few thousand characters must not cut a WARN short).
std::string format(const char* fmt, va_list ap) {
  char small[512];
  va_list again;
  va_copy(again, ap);
  const int n = vsnprintf(small, sizeof(small), fmt, ap);
  std::string text;
  if (n < 0) {
    text = fmt;  // a bad format: the format itself says more than nothing
  } else if (static_cast<size_t>(n) < sizeof(small)) {
    text.assign(small, static_cast<size_t>(n));
  } else {
    text.resize(static_cast<size_t>(n) + 1);
    vsnprintf(text.data(), text.size(), fmt, again);
    text.resize(static_cast<size_t>(n));
  }
  va_end(again);
  return text;
}

void emit(LogLevel level, unsigned long subsys, const char* file, int line, const char* fmt, va_list ap) {
  const std::string formatted = format(fmt, ap);
  const char* text = formatted.c_str();
  {
    LogState& s = logState();
    std::lock_guard<std::mutex> lock(s.sinkMutex);
    if (s.sink) s.sink(level, formatted);
  }
  if (NcclLoggerFn nccl = gNcclLogger.load(std::memory_order_acquire)) {
    nccl(static_cast<int>(level), subsys, file, line, "symmem: %s", text);
    return;
  }
  if (level == LogLevel::Warn || (level != LogLevel::None && level <= stderrLevel())) {
    const char* tag = level == LogLevel::Warn ? "WARN" : level == LogLevel::Trace ? "TRACE" : "INFO";
    fprintf(stderr, "symmem %s %s\n", tag, text);
  }
}
}  // namespace

namespace {
std::atomic<int> gLimit{static_cast<int>(LogLevel::Info)};
std::atomic<bool> gNotices{true};
}  // namespace

void setLogDetail(const Settings& settings) {
  const std::string& v = settings.text(SettingId::LogDetail);
  gLimit.store(v == "trace"                  ? static_cast<int>(LogLevel::Trace)
               : v == "warn" || v == "quiet" ? static_cast<int>(LogLevel::Warn)
                                             : static_cast<int>(LogLevel::Info),
               std::memory_order_release);
  gNotices.store(v != "quiet", std::memory_order_release);
}

bool noticesEnabled() { return gNotices.load(std::memory_order_acquire); }

bool logLevelEnabled(LogLevel level) {
  const int limit = gLimit.load(std::memory_order_relaxed);
  if (level == LogLevel::Trace) return limit == static_cast<int>(LogLevel::Trace);
  return static_cast<int>(level) <= limit;
}

NcclLoggerFn ncclLogger() { return gNcclLogger.load(std::memory_order_acquire); }

void setNcclLogger(NcclLoggerFn fn) {
  NcclLoggerFn expected = nullptr;
  if (fn) gNcclLogger.compare_exchange_strong(expected, fn, std::memory_order_acq_rel);
}

void setLogSinkForTesting(LogSink sink) {
  LogState& s = logState();
  std::lock_guard<std::mutex> lock(s.sinkMutex);
  s.sink = std::move(sink);
}

void logMessage(LogLevel level, unsigned long subsys, const char* file, int line, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  emit(level, subsys, file, line, fmt, ap);
  va_end(ap);
}

void logNoticeOnce(const std::string& key, const char* fmt, ...) {
  {
    LogState& s = logState();
    std::lock_guard<std::mutex> lock(s.onceMutex);
    if (!s.warnedOnce.insert("notice:" + key).second) return;
  }
  va_list ap;
  va_start(ap, fmt);
  const std::string text = format(fmt, ap);
  va_end(ap);
  // One write of the whole line, so that lines of several processes sharing the stream stay whole.
  if (noticesEnabled()) std::fputs(("nccl-symmem: " + text + "\n").c_str(), stderr);
  if (logLevelEnabled(LogLevel::Info)) logMessage(LogLevel::Info, kLogInit, __FILE__, __LINE__, "%s", text.c_str());
}

void logWarnOnce(const std::string& key, const char* file, int line, const char* fmt, ...) {
  {
    LogState& s = logState();
    std::lock_guard<std::mutex> lock(s.onceMutex);
    if (!s.warnedOnce.insert(key).second) return;
  }
  va_list ap;
  va_start(ap, fmt);
  emit(LogLevel::Warn, kLogInit, file, line, fmt, ap);
  va_end(ap);
}

}  // namespace symmem
