// SPDX-License-Identifier: Apache-2.0
/* What the stand-in libnccl.so.2 records of the calls that reach it (stand_in_nccl.c); tests read it
   through standInRecord(). C and C++. */
#pragma once
#include <stddef.h>

typedef struct {
  int allReduces, groupStartBodies, groupEnds, destroys, aborts, finalizes, revokes;
  const void* send;
  void* recv;
  size_t count;
  int dtype, op;
  void* comm;
  void* stream;
  void* lastTeardownComm;
  int revokeFlags;
  int allReduceConfigs, simulateEnds; /* NCCL 2.31+ entry points' bodies */
  const void* config;                 /* the last ncclAllReduceConfig's configuration */
  int asyncErrorBodies; /* pncclCommGetAsyncError's body ran (from outside, or from the stand-in itself) */
} StandInRecord;
