// Planted: the code patcher includes CUDA.
#include <cuda_runtime.h>
