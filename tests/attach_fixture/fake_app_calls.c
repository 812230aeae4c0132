// SPDX-License-Identifier: Apache-2.0
/* Stand-in for an application library (nccl-tests, libtorch_cuda.so) that calls the NCCL function
   through its PLT, i.e. through a JUMP_SLOT entry of its GOT. */
int fakeAllReduce(int x);

int fakeAppCall(int x) { return fakeAllReduce(x); }
