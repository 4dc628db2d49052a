#include "common/log_events.h"

#include <array>
#include <charconv>
#include <utility>

namespace wirewise::logev {
namespace {

constexpr std::array<std::pair<EventKind, std::string_view>, 18> kEventNames{{
    {EventKind::PluginStart, "plugin_start"},
    {EventKind::PluginStop, "plugin_stop"},
    {EventKind::CommInit, "comm_init"},
    {EventKind::CommFinalize, "comm_finalize"},
    {EventKind::ConfigProblem, "config_problem"},
    {EventKind::Collectors, "collectors"},
    {EventKind::WiringPrior, "wiring_prior"},
    {EventKind::LinkHealth, "link_health"},
    {EventKind::RailShift, "rail_shift"},
    {EventKind::Summary, "summary"},
    {EventKind::NetPaths, "net_paths"},
    {EventKind::CuptiKernels, "cupti_kernels"},
    {EventKind::Control, "control"},
    {EventKind::ControlStart, "control_start"},
    {EventKind::Verdict, "verdict"},
    {EventKind::Table, "table"},
    {EventKind::Adapt, "adapt"},
    {EventKind::LogDropped, "log_dropped"},
}};

constexpr std::array<std::pair<AdaptKind, std::string_view>, 7> kAdaptKinds{{
    {AdaptKind::Calibrated, "calibrated"},
    {AdaptKind::Alarm, "alarm"},
    {AdaptKind::Commit, "commit"},
    {AdaptKind::Recover, "recover"},
    {AdaptKind::Revert, "revert"},
    {AdaptKind::Hold, "hold"},
    {AdaptKind::Deferred, "deferred"},
}};

}  // namespace

std::string_view eventName(EventKind k) {
  for (const auto& [kind, name] : kEventNames)
    if (kind == k) return name;
  return "";
}

EventKind eventKindOf(std::string_view name) {
  for (const auto& [kind, n] : kEventNames)
    if (n == name) return kind;
  return EventKind::Unknown;
}

std::optional<EventKind> lineKindOf(const nlohmann::json& line) {
  if (!line.is_object()) return std::nullopt;
  auto it = line.find(kEventKey);
  if (it == line.end() || !it->is_string()) return std::nullopt;
  return eventKindOf(it->get_ref<const std::string&>());
}

std::string_view faceName(Face f) { return f == Face::Tuner ? "tuner" : "profiler"; }

std::string_view adaptKindName(AdaptKind k) {
  for (const auto& [kind, name] : kAdaptKinds)
    if (kind == k) return name;
  return "";
}

std::optional<AdaptKind> parseAdaptKind(std::string_view s) {
  for (const auto& [kind, name] : kAdaptKinds)
    if (name == s) return kind;
  return std::nullopt;
}

std::string formatDecision(std::string_view algo, std::string_view proto, int64_t channels) {
  std::string out;
  out.reserve(algo.size() + proto.size() + 6);
  out.append(algo).append("/").append(proto).append("/").append(std::to_string(channels));
  return out;
}

std::string formatDecision(const DecisionParts& d) { return formatDecision(d.algo, d.proto, d.channels); }

std::optional<DecisionParts> parseDecision(std::string_view s) {
  const size_t a = s.find('/');
  if (a == std::string_view::npos) return std::nullopt;
  const size_t b = s.find('/', a + 1);
  if (b == std::string_view::npos || s.find('/', b + 1) != std::string_view::npos) return std::nullopt;
  DecisionParts d{std::string(s.substr(0, a)), std::string(s.substr(a + 1, b - a - 1)), 0};
  const std::string_view ch = s.substr(b + 1);
  auto [end, ec] = std::from_chars(ch.data(), ch.data() + ch.size(), d.channels);
  if (ec != std::errc() || end != ch.data() + ch.size() || ch.empty() || d.algo.empty() || d.proto.empty())
    return std::nullopt;
  return d;
}

void stamp(nlohmann::json& event, const Envelope& e) {
  detail::Writer w{event};
  Envelope::visit(e, w);
}

bool isCoordinatorTable(const nlohmann::json& line) {
  auto src = line.find(kSourceKey);
  if (src == line.end() || src->get<std::string>() != kSourceCoordinator) return false;
  return line.contains(kIndexKey);
}

}  // namespace wirewise::logev
