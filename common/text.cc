// Keeps ww_common a real archive while most of common/ is header-only.
#include "common/text.h"

static_assert(wirewise::isPrintableAscii('~') && !wirewise::isPrintableAscii('\x7f'));
