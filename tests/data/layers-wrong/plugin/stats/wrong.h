// Planted: a room includes one above it.
#include "plugin/interpose/interposer.h"
