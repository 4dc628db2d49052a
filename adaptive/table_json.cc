#include "adaptive/table_json.h"

#include <string>

namespace wirewise {

logev::Range logRange(const TableRule& r) {
  logev::Range out;
  out.coll = r.coll >= 0 ? std::string(collName(static_cast<CollType>(r.coll))) : "any";
  out.minBytes = r.minBytes;
  out.maxBytes = r.maxBytes;
  out.algo = std::string(algoName(r.decision.algo));
  out.proto = std::string(protoName(r.decision.proto));
  out.channels = r.decision.nChannels;
  if (r.decision.chunkBytes != 0) out.chunkBytes = r.decision.chunkBytes;
  return out;
}

std::vector<logev::Range> logRanges(std::span<const TableRule> ranges) {
  std::vector<logev::Range> out;
  out.reserve(ranges.size());
  for (const TableRule& r : ranges) out.push_back(logRange(r));
  return out;
}

nlohmann::json rangesJson(std::span<const TableRule> ranges) { return logRanges(ranges); }

}  // namespace wirewise
