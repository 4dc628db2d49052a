#include "adaptive/table_json.h"

#include <string>

namespace wirewise {

nlohmann::json rangesJson(std::span<const TableRule> ranges) {
  nlohmann::json out = nlohmann::json::array();
  for (const TableRule& r : ranges)
    out.push_back({{"coll", r.coll >= 0 ? std::string(collName(static_cast<CollType>(r.coll))) : "any"},
                   {"min_bytes", r.minBytes},
                   {"max_bytes", r.maxBytes},
                   {"algo", std::string(algoName(r.decision.algo))},
                   {"proto", std::string(protoName(r.decision.proto))},
                   {"channels", r.decision.nChannels}});
  return out;
}

}  // namespace wirewise
