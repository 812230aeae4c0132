// common/ reaching up into a tool: the layer check must refuse it.
#include "tools/report/text.h"
