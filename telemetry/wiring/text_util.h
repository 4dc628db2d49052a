// Number formatting shared by the analysis and the renderers.
#pragma once

#include <cstdio>
#include <string>

namespace wirewise::wiring {

// v with `decimals` digits after the point ("380.1"); fixed notation, C locale.
inline std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

}  // namespace wirewise::wiring
