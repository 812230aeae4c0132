#include <gtest/gtest.h>
#include "plugin/settings.h"
TEST(Settings, Placeholder) { EXPECT_EQ(symmem::settingSpecs().size(), 10u); }
