// A tool's file outside the tool folders: the layer check must refuse it.
#include "tools/common/cli_values.h"
