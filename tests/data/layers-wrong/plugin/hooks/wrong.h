// Planted: the code patcher includes the project.
#include "core/log.h"
