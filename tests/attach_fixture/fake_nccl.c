// SPDX-License-Identifier: Apache-2.0
/* Stand-in for libnccl.so.2: the library that defines the real function. The value is fixed so a
   test can tell the real function's answer from a replacement's. */
int fakeAllReduce(int x) { return x + 1000; }

/* Defined but imported by no fixture caller: attach reports it as unreferenced. */
int fakeGroupEnd(void) { return 7; }
