// Planted: a tool includes the code patcher.
#include "plugin/hooks/code_hook.h"
