// Planted: a tool includes the interposer: tools use of the plugin only plugin/nccl and plugin/process.
#include "plugin/interpose/interposer.h"
