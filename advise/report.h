// The advisor's outputs: the ranked table with the recommended knobs, the JSON document (docs/advise.md §6) and
// an SVG chart. Pure: they return text.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "advise/advise.h"

namespace wirewise::advise {

// "shard 8 GPUs" (HSDP), "bucket 25 MB" (DDP, ZeRO-1/2), "" (strategies without a knob).
std::string knobText(const Strategy& s);
std::string formatTable(const AdviseResult& r);
nlohmann::json toJson(const AdviseResult& r);
std::string chartSvg(const AdviseResult& r);

}  // namespace wirewise::advise
