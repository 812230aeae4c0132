// A core header that reaches up into the plugin: the layer check must refuse it.
#include "plugin/interpose/interposer.h"
