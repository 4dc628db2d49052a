// The texts of the once-per-runtime notices (runtime/face_notices.h): what is missing, what runs
// meanwhile and the fix, in one line. Through the real library and loader: tests/plugin/safe_start_test.cc.
#include "runtime/face_notices.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace wirewise {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

Settings adaptive() {
  Settings s;
  s.mode = Mode::Apply;
  s.sync = SyncMode::On;
  s.policy = PolicyKind::Adaptive;
  return s;
}

TEST(FaceNotices, AdaptationIsAskedOnlyWithAgreementAndAnAdaptingPolicy) {
  Settings s = adaptive();
  EXPECT_TRUE(adaptationAsked(s));
  s.policy = PolicyKind::Static;
  EXPECT_FALSE(adaptationAsked(s));
  s = adaptive();
  s.sync = SyncMode::Off;
  EXPECT_FALSE(adaptationAsked(s));
  s = adaptive();
  s.mode = Mode::Observe;
  EXPECT_FALSE(adaptationAsked(s));
}

TEST(FaceNotices, WhatRunsMeanwhileNamesTheStaticTable) {
  Settings s = adaptive();
  EXPECT_EQ(whatRunsMeanwhile(s), "NCCL's own choices (no WIREWISE_CONFIG)");
  s.config = "/etc/ww.json";
  EXPECT_EQ(whatRunsMeanwhile(s), "its static table from /etc/ww.json");
  s.mode = Mode::Observe;  // observe never applies a table
  EXPECT_EQ(whatRunsMeanwhile(s), "NCCL's own choices");
}

TEST(FaceNotices, NoProfilerFaceSaysWhyWhatRunsAndTheFix) {
  const std::string t = noProfilerFaceText(adaptive(), nullptr);
  EXPECT_THAT(t, HasSubstr("no profiler face in this process (NCCL_PROFILER_PLUGIN is unset)"));
  EXPECT_THAT(t, HasSubstr("nothing adapts"));
  EXPECT_THAT(t, HasSubstr("every communicator keeps NCCL's own choices"));
  EXPECT_THAT(t, HasSubstr("adaptation needs NCCL_PROFILER_PLUGIN=wirewise"));
  EXPECT_THAT(noProfilerFaceText(adaptive(), ""), HasSubstr("NCCL_PROFILER_PLUGIN is unset"));
  EXPECT_THAT(noProfilerFaceText(adaptive(), "inspector"),
              HasSubstr("NCCL_PROFILER_PLUGIN=inspector loaded no wirewise profiler"));
  Settings observe;
  observe.mode = Mode::Observe;
  EXPECT_THAT(noProfilerFaceText(observe, nullptr), HasSubstr("observe mode measures nothing"));
  Settings staticOnly;  // agreement off: the static table needs no measurements
  staticOnly.sync = SyncMode::Off;
  EXPECT_THAT(noProfilerFaceText(staticOnly, nullptr), Not(HasSubstr("adapt")));
  // By default adaptation is asked for.
  EXPECT_THAT(noProfilerFaceText(Settings{}, nullptr), HasSubstr("adaptation needs NCCL_PROFILER_PLUGIN=wirewise"));
  EXPECT_EQ(t.find('\n'), std::string::npos);
}

TEST(FaceNotices, AnOlderTunerNamesTheNcclVersionOrItsReleases) {
  const std::string known = legacyTunerText(adaptive(), 4, 22705);
  EXPECT_THAT(known, HasSubstr("this NCCL (2.27.5) binds tuner v4"));
  EXPECT_THAT(known, HasSubstr("adaptation needs tuner v5: use NCCL 2.28.3 or later"));
  EXPECT_THAT(known, Not(HasSubstr("2.24.3")));
  EXPECT_THAT(legacyTunerText(adaptive(), 4, 0), HasSubstr("binds tuner v4 (NCCL 2.24.3 to 2.28.2)"));
  EXPECT_THAT(legacyTunerText(adaptive(), 3, 0), HasSubstr("binds tuner v3 (NCCL 2.22.3 to 2.24.2)"));
  EXPECT_THAT(legacyTunerText(adaptive(), 2, 0), HasSubstr("binds tuner v2 (NCCL 2.21.5 to 2.22.2)"));
}

TEST(FaceNotices, NcclVersionCodes) {
  EXPECT_EQ(ncclVersionText(22705), "2.27.5");
  EXPECT_EQ(ncclVersionText(22103), "2.21.3");
  EXPECT_EQ(ncclVersionText(2804), "2.8.4");  // before 2.9: X*1000 + Y*100 + Z
  EXPECT_EQ(ncclVersionText(0), "");
  EXPECT_EQ(runningNcclVersion(), 0);  // this test binary exports no ncclGetVersion
}

}  // namespace
}  // namespace wirewise
