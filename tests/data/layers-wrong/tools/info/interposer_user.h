// Planted: a tool includes the interposer (not yet in a room): tools use only plugin/nccl and plugin/process.
#include "plugin/interposer.h"
