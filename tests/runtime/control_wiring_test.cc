// The control plane's options as the runtime derives them from the settings.
#include "runtime/control_wiring.h"

#include <gtest/gtest.h>

namespace wirewise {
namespace {

// Members of one communicator present the same verdicts in index order, interleaved: the process logs the
// first, then only a change, once; another communicator keeps its own account.
TEST(VerdictLogFilter, OncePerProcessAndOnlyWhenTheVerdictChanges) {
  VerdictLogFilter f;
  int asked = 0;
  const auto content = [&](const char* c) {
    return [&asked, c] {
      ++asked;
      return std::string(c);
    };
  };
  EXPECT_TRUE(f.admit(1, 0, content("static")));   // member A, verdict 0
  EXPECT_FALSE(f.admit(1, 0, content("static")));  // member B, verdict 0: already logged
  EXPECT_FALSE(f.admit(1, 1, content("static")));  // A, verdict 1: nothing changed
  EXPECT_TRUE(f.admit(1, 2, content("t2")));       // A, verdict 2: a new table
  EXPECT_FALSE(f.admit(1, 1, content("static")));  // B catches up: older than what was presented
  EXPECT_FALSE(f.admit(1, 2, content("t2")));
  EXPECT_TRUE(f.admit(1, 3, content("static")));   // back to the first table: a change from verdict 2
  EXPECT_TRUE(f.admit(2, 0, content("static")));   // another communicator
  EXPECT_FALSE(f.admit(2, 1, content("static")));
  EXPECT_EQ(asked, 6);  // the content is built only for an index new to the process
}

TEST(ControlWiring, DeterministicSyncSpacesBoundariesFixedUnlessConfigured) {
  Settings s;
  s.sync = SyncMode::Deterministic;
  control::ControlOptions o = controlOptions(s);
  EXPECT_TRUE(o.params.deterministic);
  EXPECT_EQ(o.params.fixedSpacing, 32u);
  EXPECT_FALSE(o.params.useFixedSpacing);
  s.boundarySpacing = 100;
  o = controlOptions(s);
  EXPECT_EQ(o.params.fixedSpacing, 100u);
  EXPECT_TRUE(o.params.useFixedSpacing);
  s.sync = SyncMode::On;
  s.boundarySpacing = 0;
  o = controlOptions(s);
  EXPECT_FALSE(o.params.deterministic);
  EXPECT_FALSE(o.params.useFixedSpacing);
}

TEST(ControlWiring, ThePolicyAndDetectorComeFromTheSettings) {
  Settings s;
  s.policy = PolicyKind::Adaptive;
  s.detectThreshold = 0.2;
  s.detectDrift = 0.05;
  s.exploreShare = 0.1;
  s.switchGain = 0.07;
  s.probeSpacing = 5;
  s.joinTimeoutMs = 1234;
  control::ControlOptions o = controlOptions(s);
  const control::ControlOptions defaults;
  EXPECT_EQ(o.policy, PolicyKind::Adaptive);
  EXPECT_DOUBLE_EQ(o.adaptive.detector.threshold, 0.2);
  EXPECT_DOUBLE_EQ(o.adaptive.detector.drift, 0.05);
  // The clip never exceeds three quarters of the threshold, so one outlier cannot trip the detector alone.
  EXPECT_DOUBLE_EQ(o.adaptive.detector.clip, std::min(defaults.adaptive.detector.clip, 0.15));
  s.detectThreshold = 0.04;
  EXPECT_DOUBLE_EQ(controlOptions(s).adaptive.detector.clip, 0.03);
  EXPECT_DOUBLE_EQ(o.adaptive.exploreShare, 0.1);
  EXPECT_DOUBLE_EQ(o.adaptive.switchGain, 0.07);
  EXPECT_EQ(o.adaptive.probeSpacing, 5u);
  EXPECT_EQ(o.params.joinTimeoutMs, 1234);
}

TEST(ControlWiring, NoPlaneWithoutSync) {
  Settings s;
  ParsedConfig config;
  ControlWiring w(s, config, [](const char*) -> const char* { return nullptr; }, {});
  EXPECT_EQ(w.plane(), nullptr);
  s.sync = SyncMode::On;
  s.mode = Mode::Observe;
  EXPECT_EQ(w.plane(), nullptr);  // observe mode never agrees on tables
}

// A refused key file: the refusal goes to the log, and no plane starts (never a derived key instead).
TEST(ControlWiring, ARefusedKeyFileStartsNoPlane) {
  Settings s;
  s.sync = SyncMode::On;
  s.jobKeyFile = "/nonexistent/wirewise.key";
  ParsedConfig config;
  std::vector<nlohmann::json> events;
  ControlHooks hooks;
  hooks.event = [&](nlohmann::json ev) { events.push_back(std::move(ev)); };
  ControlWiring w(s, config, [](const char*) -> const char* { return nullptr; }, hooks);
  EXPECT_EQ(w.plane(), nullptr);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].value("event", ""), "control");
  EXPECT_EQ(events[0].value("level", ""), "warn");
  EXPECT_NE(events[0].value("message", "").find("WIREWISE_JOB_KEY_FILE=/nonexistent/wirewise.key is refused"),
            std::string::npos)
      << events[0].dump();
}

}  // namespace
}  // namespace wirewise
