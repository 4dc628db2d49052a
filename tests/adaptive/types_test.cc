#include "adaptive/types.h"

#include <gtest/gtest.h>

namespace wirewise {
namespace {

TEST(Types, NamesRoundTrip) {
  for (int c = 0; c < kNumCollTypes; ++c) EXPECT_EQ(parseColl(collName(CollType(c))), c);
  for (int a = 0; a < kNumAlgos; ++a) EXPECT_EQ(parseAlgo(algoName(a)), a);
  for (int p = 0; p < kNumProtos; ++p) EXPECT_EQ(parseProto(protoName(p)), p);
  EXPECT_EQ(algoName(kAny), "any");
  EXPECT_EQ(protoName(kAny), "any");
  EXPECT_EQ(algoName(7), "?");
  EXPECT_EQ(protoName(-2), "?");
  EXPECT_EQ(collName(CollType(9)), "?");
}

TEST(Types, AcceptsNcclSpellingsCaseInsensitively) {
  EXPECT_EQ(parseColl("AllReduce"), 4);
  EXPECT_EQ(parseColl("reduce_scatter"), 3);
  EXPECT_EQ(parseColl("ALLGATHER"), 2);
  EXPECT_EQ(parseAlgo("CollNetDirect"), kAlgoCollNetDirect);
  EXPECT_EQ(parseAlgo("collnet_chain"), kAlgoCollNetChain);
  EXPECT_EQ(parseAlgo("NVLSTree"), kAlgoNvlsTree);
  EXPECT_EQ(parseAlgo("nvls_tree"), kAlgoNvlsTree);
  EXPECT_EQ(parseAlgo("PAT"), kAlgoPat);
  EXPECT_EQ(parseProto("LL128"), kProtoLL128);
  EXPECT_EQ(parseProto("Simple"), kProtoSimple);
}

TEST(Types, WildcardsAndRejects) {
  for (auto s : {"-1", "any", "ANY", "default"}) {
    EXPECT_EQ(parseAlgo(s), kAny) << s;
    EXPECT_EQ(parseProto(s), kAny) << s;
  }
  EXPECT_EQ(parseColl("-1"), kAny);
  EXPECT_EQ(parseColl("any"), kAny);
  EXPECT_EQ(parseColl("default"), -2);  // a collective has no "default"
  for (auto s : {"", "rings", "ll12", "allreduce2", " ring", "0", "1", "-2"}) {
    EXPECT_EQ(parseAlgo(s), -2) << s;
    EXPECT_EQ(parseProto(s), -2) << s;
  }
  EXPECT_EQ(parseColl(std::string(100, 'a')), -2);
  EXPECT_EQ(parseAlgo(std::string_view("ring\0", 5)), -2);
}

}  // namespace
}  // namespace wirewise
