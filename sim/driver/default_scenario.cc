// The default scenario, embedded at build time (see CMakeLists.txt) so `wirewise simulate` needs no source tree.
#include "sim/driver/driver.h"

namespace wirewise::sim {

const char* defaultScenarioJson() {
  static const char kJson[] =
#include "default_scenario.inc"
      ;
  return kJson;
}

}  // namespace wirewise::sim
