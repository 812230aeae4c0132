// SPDX-License-Identifier: Apache-2.0
/* A stand-in libnccl.so.2 for the code-hook tests: the entry points the plugin hooks
   (stand_in_nccl_entry.S) end in the bodies below, which record what they were called with; the rest
   of what the plugin resolves (pncclCommCount, ...) answers as a one-rank communicator would. Tests
   read the record through standInRecord(). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "stand_in_record.h"

#define HIDDEN __attribute__((visibility("hidden")))
#define EXPORT __attribute__((visibility("default")))

typedef int ncclResult;
enum { kSuccess = 0, kRemoteError = 6 };

static StandInRecord record;
HIDDEN int standInGroupStarts;      /* bumped by pncclGroupStart's RIP-relative prologue */
static void (*abortCallback)(void); /* runs inside pncclCommAbort, as NCCL unloads its tuner there */

EXPORT StandInRecord* standInRecord(void) { return &record; }
EXPORT int standInGroupStartCount(void) { return standInGroupStarts; }
EXPORT void standInSetAbortCallback(void (*fn)(void)) { abortCallback = fn; }

static void recordAllReduce(const void* send, void* recv, size_t count, int dtype, int op, void* comm, void* stream) {
  record.send = send;
  record.recv = recv;
  record.count = count;
  record.dtype = dtype;
  record.op = op;
  record.comm = comm;
  record.stream = stream;
}
/* Distinct return values: a test can tell a forwarded result from anything else. */
HIDDEN ncclResult standInAllReduce(const void* send, void* recv, size_t count, int dtype, int op, void* comm,
                                   void* stream) {
  record.allReduces++;
  recordAllReduce(send, recv, count, dtype, op, comm, stream);
  return kRemoteError;
}
HIDDEN ncclResult standInAllReduceConfig(const void* send, void* recv, size_t count, int dtype, int op, void* comm,
                                         void* stream, const void* config) {
  record.allReduceConfigs++;
  recordAllReduce(send, recv, count, dtype, op, comm, stream);
  record.config = config;
  return kRemoteError;
}
HIDDEN ncclResult standInGroupSimulateEnd(void* simInfo) {
  record.simulateEnds++;
  return kSuccess;
}
HIDDEN ncclResult standInGroupStart(void) {
  record.groupStartBodies++;
  return kSuccess;
}
HIDDEN ncclResult standInGroupEnd(void) {
  record.groupEnds++;
  return kSuccess;
}
HIDDEN ncclResult standInCommDestroy(void* comm) {
  record.destroys++;
  record.lastTeardownComm = comm;
  return kSuccess;
}
HIDDEN ncclResult standInCommAbort(void* comm) {
  record.aborts++;
  record.lastTeardownComm = comm;
  if (abortCallback) abortCallback();
  return kSuccess;
}
HIDDEN ncclResult standInCommFinalize(void* comm) {
  record.finalizes++;
  record.lastTeardownComm = comm;
  return kSuccess;
}
HIDDEN ncclResult standInCommRevoke(void* comm, int flags) {
  record.revokes++;
  record.lastTeardownComm = comm;
  record.revokeFlags = flags;
  return kSuccess;
}

/* The rest of what the plugin resolves. */
#define ALIAS(name) __attribute__((weak, alias("p" #name)))
EXPORT ncclResult pncclAllGather(const void* s, void* r, size_t n, int t, void* c, void* st) { return kSuccess; }
EXPORT ncclResult ncclAllGather(const void* s, void* r, size_t n, int t, void* c, void* st) ALIAS(ncclAllGather);
EXPORT ncclResult pncclCommCount(const void* c, int* n) {
  *n = 1;
  return kSuccess;
}
EXPORT ncclResult ncclCommCount(const void* c, int* n) ALIAS(ncclCommCount);
EXPORT ncclResult pncclCommUserRank(const void* c, int* r) {
  *r = 0;
  return kSuccess;
}
EXPORT ncclResult ncclCommUserRank(const void* c, int* r) ALIAS(ncclCommUserRank);
EXPORT ncclResult pncclCommCuDevice(const void* c, int* d) {
  *d = 0;
  return kSuccess;
}
EXPORT ncclResult ncclCommCuDevice(const void* c, int* d) ALIAS(ncclCommCuDevice);
EXPORT ncclResult pncclCommGetAsyncError(void* c, ncclResult* e) {
  record.asyncErrorBodies++;
  *e = kSuccess;
  return kSuccess;
}
EXPORT ncclResult ncclCommGetAsyncError(void* c, ncclResult* e) ALIAS(ncclCommGetAsyncError);
/* As NCCL's ncclCommEnsureReady does on every enqueue: its own exported ncclCommGetAsyncError,
   through its PLT (an exported, interposable symbol). */
EXPORT ncclResult standInAsyncErrorFromInside(void* c) {
  ncclResult e = kSuccess;
  return ncclCommGetAsyncError(c, &e);
}
EXPORT const char* pncclGetErrorString(ncclResult r) { return "stand-in"; }
EXPORT const char* ncclGetErrorString(ncclResult r) ALIAS(ncclGetErrorString);
EXPORT ncclResult pncclGetVersion(int* v) {
  *v = 22809;
  return kSuccess;
}
EXPORT ncclResult ncclGetVersion(int* v) ALIAS(ncclGetVersion);

/* NCCL's logger lives in libnccl; this one keeps what it was given, for tests to read. */
static char logText[16384];
EXPORT void standInLog(int level, unsigned long flags, const char* file, int line, const char* fmt, ...) {
  size_t used = strlen(logText);
  if (used + 2 >= sizeof(logText)) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(logText + used, sizeof(logText) - used - 1, fmt, ap);
  va_end(ap);
  strcat(logText, "\n");
}
EXPORT const char* standInLogText(void) { return logText; }
