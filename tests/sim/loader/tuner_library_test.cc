// NCCL's per-process tuner library state: loaded once, sticky failure, dlclose only where 2.28.9 closes.
#include <gtest/gtest.h>

#include "sim/loader/nccl_loader.h"
#include "tests/sim/loader/loader_test_util.h"

namespace wirewise::loader {
namespace {

using testing::isLoaded;

TEST(TunerLibrary, SingleCommLoadsAndClosesOnUnload) {
  ASSERT_FALSE(isLoaded(WW_FAKE_TUNER_LIFE));
  TunerLibrary lib(std::string(WW_FAKE_TUNER_LIFE), std::nullopt);
  TunerComm comm;
  lib.load(&comm);
  ASSERT_NE(comm.tuner, nullptr) << lib.why();
  EXPECT_EQ(comm.tuner->version(), 5);
  EXPECT_TRUE(comm.pluginLoaded);
  EXPECT_EQ(lib.refCount(), 1);
  EXPECT_EQ(lib.status(), TunerLibrary::Status::Loaded);
  EXPECT_TRUE(isLoaded(WW_FAKE_TUNER_LIFE));
  lib.unload(&comm);
  EXPECT_EQ(comm.tuner, nullptr);
  EXPECT_FALSE(comm.pluginLoaded);
  EXPECT_EQ(lib.refCount(), 0);
  EXPECT_EQ(lib.status(), TunerLibrary::Status::Ready);
  EXPECT_FALSE(lib.libraryOpen());
  EXPECT_FALSE(isLoaded(WW_FAKE_TUNER_LIFE));
}

TEST(TunerLibrary, LoadedOncePerProcessAndNeverClosedWithTwoComms) {
  TunerLibrary lib(std::string(WW_FAKE_TUNER_LIFE), std::nullopt);
  TunerComm a, b;
  lib.load(&a);
  lib.load(&b);
  ASSERT_NE(a.tuner, nullptr);
  EXPECT_EQ(a.tuner, b.tuner) << "one tuner shared by both comms";
  EXPECT_EQ(lib.openAttempts(), 1);
  EXPECT_TRUE(a.pluginLoaded);
  EXPECT_FALSE(b.pluginLoaded) << "2.28.9 fast path leaves the flag unset";
  EXPECT_EQ(lib.refCount(), 2);
  lib.unload(&b);
  lib.unload(&a);
  EXPECT_EQ(lib.refCount(), 1);
  EXPECT_TRUE(lib.libraryOpen());
  EXPECT_TRUE(isLoaded(WW_FAKE_TUNER_LIFE)) << "the refcount quirk leaks the library";
}

TEST(TunerLibrary, DestructorReleasesWhatNcclWouldLeak) {
  {
    TunerLibrary lib(std::string(WW_FAKE_TUNER_LIFE), std::nullopt);
    TunerComm a, b;
    lib.load(&a);
    lib.load(&b);
  }
  EXPECT_FALSE(isLoaded(WW_FAKE_TUNER_LIFE));
}

TEST(TunerLibrary, ReloadsAfterAFullUnload) {
  TunerLibrary lib(std::string(WW_FAKE_TUNER_LIFE), std::nullopt);
  TunerComm a;
  lib.load(&a);
  lib.unload(&a);
  TunerComm b;
  lib.load(&b);
  EXPECT_NE(b.tuner, nullptr);
  EXPECT_EQ(lib.openAttempts(), 2);
  lib.unload(&b);
}

TEST(TunerLibrary, FailureIsStickyAndNeverRetried) {
  TunerLibrary lib(std::string("missing-tuner"), std::nullopt);
  TunerComm a, b;
  lib.load(&a);
  lib.load(&b);
  EXPECT_EQ(a.tuner, nullptr);
  EXPECT_EQ(b.tuner, nullptr);
  EXPECT_EQ(lib.status(), TunerLibrary::Status::Failed);
  EXPECT_EQ(lib.openAttempts(), 1);
  EXPECT_FALSE(lib.why().empty());
  lib.unload(&a);
  EXPECT_EQ(lib.refCount(), 0);
}

TEST(TunerLibrary, UnsupportedLibraryIsClosed) {
  TunerLibrary lib(std::string(WW_FAKE_EMPTY), std::nullopt);
  TunerComm comm;
  lib.load(&comm);
  EXPECT_EQ(comm.tuner, nullptr);
  EXPECT_EQ(lib.status(), TunerLibrary::Status::Failed);
  EXPECT_NE(lib.why().find("unsupported"), std::string::npos);
  EXPECT_FALSE(isLoaded(WW_FAKE_EMPTY));
}

TEST(TunerLibrary, NoneMeansNoTunerEvenWithANetLibrary) {
  TunerLibrary lib(std::string("none"), std::string(WW_FAKE_NET));
  TunerComm comm;
  lib.load(&comm);
  EXPECT_EQ(comm.tuner, nullptr);
  EXPECT_TRUE(lib.lastOpen().disabled);
  EXPECT_FALSE(isLoaded(WW_FAKE_NET));
}

TEST(TunerLibrary, FallsBackToTheNetLibrarysTuner) {
  // An unset env would find this directory's libnccl-tuner.so first: use a missing name instead.
  TunerLibrary fallback(std::string("missing-tuner"), std::string(WW_FAKE_NET));
  TunerComm comm;
  fallback.load(&comm);
  ASSERT_NE(comm.tuner, nullptr) << fallback.why();
  EXPECT_TRUE(fallback.lastOpen().viaNetFallback);
  EXPECT_EQ(comm.tuner->version(), 3);
  EXPECT_STREQ(comm.tuner->name(), "fake-v3");
  fallback.unload(&comm);
  EXPECT_FALSE(isLoaded(WW_FAKE_NET)) << "the fallback handle is closed like any other";
}

}  // namespace
}  // namespace wirewise::loader
