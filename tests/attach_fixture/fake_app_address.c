// SPDX-License-Identifier: Apache-2.0
/* Stand-in for a caller that takes the function's address (a dispatch table, a ctypes-style pointer):
   compiled as PIC, the address is loaded from a GLOB_DAT entry of the GOT. */
typedef int (*FakeAllReduceFn)(int);
int fakeAllReduce(int x);

FakeAllReduceFn fakeAppAddress(void) { return &fakeAllReduce; }

int fakeAppCallThroughPointer(int x) {
  /* volatile: the call must go through the loaded address, not become a direct PLT call. */
  FakeAllReduceFn volatile fn = &fakeAllReduce;
  return fn(x);
}
