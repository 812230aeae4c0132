// SPDX-License-Identifier: Apache-2.0
/* Stand-in for a library with NCCL linked in statically: it defines the symbol itself, so its own
   calls never go through a GOT that attach could rewrite. */
int fakeAllReduce(int x) { return x + 5000; }

int fakeDefinerCall(int x) { return fakeAllReduce(x); }
