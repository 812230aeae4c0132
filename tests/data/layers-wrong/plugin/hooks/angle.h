// Planted: a project header with angle brackets.
#include <core/settings.h>
