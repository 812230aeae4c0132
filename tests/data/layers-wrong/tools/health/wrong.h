// A tool that reaches into another tool: the layer check must refuse it (what two tools share goes in
// tools/common/).
#include "tools/tune/plan.h"
