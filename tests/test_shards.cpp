// Recordings on a cluster without the cluster (docs/scale-out.md): `replay
// --frames START:END` parts joined by `stripeline join` give, byte for byte,
// the files one replay writes, for every output kind and encoding; parts that
// do not fit together, and bad ranges, are refused with one line, exit 2 and
// nothing written. tests/slurm/check_slurm_array.py runs the same through a
// real Slurm.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/metadata.h"
#include "io/metadata_reader.h"
#include "gpu_test.h"
#include "test_helpers.h"

namespace stripeline {
namespace {

namespace fs = std::filesystem;
using test::run_cli;
using test::TempDir;

std::string bytes_of(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string calibration() { return test::source_dir() + "/tests/data/slurm/sheet-of-light.toml"; }

// One output kind: its replay flag and file extension.
struct Kind {
  std::string flag, ext;
};

// Replays `rec` whole (`range` "") or in part into dir/<name>.<ext> for every kind; asserts it succeeds.
void replay(const std::string& rec, const std::string& h, const std::string& range, const std::string& more, const TempDir& dir,
            const std::string& name, const std::vector<Kind>& kinds) {
  std::string args = "replay " + rec + " -H " + h + " -q " + more + (range.empty() ? "" : " --frames " + range);
  for (const Kind& k : kinds) args += " " + k.flag + " " + (dir / (name + k.ext)).string();
  std::string out;
  ASSERT_EQ(run_cli(args, &out), 0) << args << "\n" << out;
}

// Parts of `rec` (given out of order) joined per kind equal the whole replay's
// files; the whole replay also gets `whole_more`, the parts `part_more` (the backends, say).
void expect_parts_join_to_the_whole(const std::string& rec, const std::string& h, const std::vector<std::string>& ranges, const std::string& more,
                                    const std::vector<Kind>& kinds, const std::string& whole_more = "", const std::string& part_more = "") {
  TempDir dir;
  replay(rec, h, "", more + " " + whole_more, dir, "whole", kinds);
  for (std::size_t i = 0; i < ranges.size(); ++i) replay(rec, h, ranges[i], more + " " + part_more, dir, "part" + std::to_string(i), kinds);
  for (const Kind& k : kinds) {
    SCOPED_TRACE(k.flag + " " + more);
    std::string args = "join";
    for (std::size_t i = ranges.size(); i-- > 0;) args += " " + (dir / ("part" + std::to_string(i) + k.ext)).string();
    const fs::path joined = dir / ("joined" + k.ext);
    std::string out;
    ASSERT_EQ(run_cli(args + " --out " + joined.string(), &out), 0) << out;
    EXPECT_NE(out.find("(the whole recording)"), std::string::npos) << out;
    const std::string a = bytes_of(joined), b = bytes_of(dir / ("whole" + k.ext));
    EXPECT_GT(b.size(), 100u);
    EXPECT_TRUE(a == b) << "joined " << a.size() << " bytes, the whole replay " << b.size();
    // A part's metadata records its range; the joined file records none, as the whole replay's.
    const metadata::Json part = io::read_metadata(dir / ("part0" + k.ext));
    EXPECT_EQ(part["frame_range"]["start"], 0);
    EXPECT_FALSE(io::read_metadata(joined).contains("frame_range"));
  }
}

TEST(Shards, EveryKindJoinsToTheUnshardedReplayByteForByte) {
  TempDir dir;
  const std::string rec = (dir / "rec.tiff").string();
  ASSERT_EQ(run_cli("synth " + rec + " --width 320 --frame-height 40 --frames 47"), 0);
  const std::vector<std::string> ranges = {"0:13", "13:14", "14:40", "40:47"};
  expect_parts_join_to_the_whole(rec, "40", ranges, "", {{"--ply", ".ply"}, {"--heightmap", ".png"}, {"--xyz-tiff", "-x.tif"}});
  expect_parts_join_to_the_whole(rec, "40", ranges, "--ply-format ascii --height-bits 4", {{"--ply", ".ply"}, {"--heightmap", "-h.tif"}});
  // Calibrated: points in mm, range maps (float TIFF and 16-bit codes).
  const std::string gauge = (dir / "gauge.tiff").string();
  ASSERT_EQ(run_cli("synth " + gauge + " --scene gauge --roi 160,460,256,232 --frames 21"), 0);
  expect_parts_join_to_the_whole(gauge, "232", {"0:8", "8:21"},
                                 "--calibration " + calibration() + " --roi-offset 160,460 --range-grid -45:-17:0.25",
                                 {{"--ply", ".ply"}, {"--xyz-tiff", "-x.tif"}, {"--range-map", "-r.tif"}, {"--range-codes", "-rc.png"}});
}

// CPU and CUDA give the same bits, and the metadata records no backend: parts
// replayed on the GPU join into the CPU's whole replay, byte for byte.
class ShardsOnCuda : public test::CudaTest {};

TEST_F(ShardsOnCuda, GpuPartsJoinToTheCpuWholeReplay) {
  TempDir dir;
  const std::string rec = (dir / "rec.tiff").string();
  ASSERT_EQ(run_cli("synth " + rec + " --width 333 --frame-height 41 --frames 37"), 0);  // odd sizes
  expect_parts_join_to_the_whole(rec, "41", {"0:1", "1:20", "20:37"}, "", {{"--ply", ".ply"}, {"--heightmap", ".png"}, {"--xyz-tiff", "-x.tif"}},
                                 "--backend cpu", "--backend cuda");
  const std::string gauge = (dir / "gauge.tiff").string();
  ASSERT_EQ(run_cli("synth " + gauge + " --scene gauge --roi 160,460,256,232 --frames 21"), 0);
  expect_parts_join_to_the_whole(gauge, "232", {"0:8", "8:21"},
                                 "--calibration " + calibration() + " --roi-offset 160,460 --range-grid -45:-17:0.25",
                                 {{"--ply", ".ply"}, {"--xyz-tiff", "-x.tif"}, {"--range-map", "-r.tif"}}, "--backend cpu", "--backend cuda");
}

TEST(Shards, AlternateFramesAndTheirPairsJoinToo) {
  TempDir dir;
  const std::string rec = (dir / "rec.tiff").string();
  ASSERT_EQ(run_cli("synth " + rec + " --width 200 --frame-height 30 --frames 41"), 0);
  expect_parts_join_to_the_whole(rec, "30", {"0:10", "10:24", "24:41"}, "--alternate", {{"--ply", ".ply"}, {"--heightmap", ".png"}});
  std::string out;
  EXPECT_EQ(run_cli("replay " + rec + " -H 30 -q --alternate --frames 3:10 --heightmap " + (dir / "h.png").string(), &out), 2);
  EXPECT_NE(out.find("splits a laser-on/off pair"), std::string::npos) << out;
}

TEST(Shards, APartialJoinIsThePartReplayedWhole) {
  TempDir dir;
  const std::string rec = (dir / "rec.tiff").string();
  ASSERT_EQ(run_cli("synth " + rec + " --width 160 --frame-height 20 --frames 30"), 0);
  replay(rec, "20", "5:12", "", dir, "a", {{"--ply", ".ply"}});
  replay(rec, "20", "12:20", "", dir, "b", {{"--ply", ".ply"}});
  replay(rec, "20", "5:20", "", dir, "ab", {{"--ply", ".ply"}});
  std::string out;
  ASSERT_EQ(run_cli("join " + (dir / "b.ply").string() + " " + (dir / "a.ply").string() + " --out " + (dir / "j.ply").string(), &out), 0) << out;
  EXPECT_NE(out.find("frames 5:20 of 30"), std::string::npos) << out;
  EXPECT_TRUE(bytes_of(dir / "j.ply") == bytes_of(dir / "ab.ply"));
}

// A refused call: exit 2, one line naming what, and no file left (no temporary either).
void expect_refused(const std::string& args, const TempDir& dir, const std::string& says) {
  const auto before = dir.entries();
  std::string out;
  EXPECT_EQ(run_cli(args, &out), 2) << args << "\n" << out;
  EXPECT_NE(out.find(says), std::string::npos) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  EXPECT_EQ(dir.entries(), before) << args;
}

TEST(Shards, PartsThatDoNotFitAreRefusedAndNothingIsWritten) {
  TempDir dir;
  const std::string rec = (dir / "rec.tiff").string();
  ASSERT_EQ(run_cli("synth " + rec + " --width 160 --frame-height 20 --frames 30"), 0);
  for (const char* r : {"0:10", "10:20", "20:30", "5:15"}) {
    std::string name = r;
    name[name.find(':')] = '_';
    replay(rec, "20", r, "", dir, "p" + name, {{"--ply", ".ply"}, {"--heightmap", ".png"}});
  }
  replay(rec, "20", "10:20", "--threshold 60", dir, "t10_20", {{"--ply", ".ply"}});
  replay(rec, "20", "", "", dir, "whole", {{"--ply", ".ply"}});
  const auto p = [&](const std::string& n) { return (dir / n).string() + " "; };
  const std::string out = "--out " + (dir / "j.ply").string();
  expect_refused("join " + p("p0_10.ply") + p("p20_30.ply") + out, dir, "frames 10:20 are in no part");
  expect_refused("join " + p("p0_10.ply") + p("p5_15.ply") + p("p10_20.ply") + out, dir, "overlaps");
  expect_refused("join " + p("p0_10.ply") + p("p10_20.png") + out, dir, "expected one kind of output per join");
  expect_refused("join " + p("p0_10.ply") + p("t10_20.ply") + p("p20_30.ply") + out, dir, "made with other settings");
  expect_refused("join " + p("whole.ply") + out, dir, "records no frame range");
  expect_refused("join " + p("p0_10.ply") + p("p10_20.ply") + "--out " + (dir / "j.png").string(), dir, "expected a .ply name");
  expect_refused("join " + p("p0_10.ply") + p("p10_20.ply") + "--out " + (dir / "p0_10.ply").string(), dir, "is one of the parts");
  // A part whose metadata was edited (another calibration, say): the key is named.
  std::string text = bytes_of(dir / "p10_20.ply");
  const std::size_t at = text.find("\"method\":\"");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 10, "\"methoX\":\"");
  std::ofstream(dir / "e10_20.ply", std::ios::binary) << text;
  expect_refused("join " + p("p0_10.ply") + p("e10_20.ply") + out, dir, "'method' differs");
}

TEST(Shards, BadRangesAreOneLineExitTwoAndWriteNothing) {
  TempDir dir;
  const std::string rec = (dir / "rec.tiff").string();
  ASSERT_EQ(run_cli("synth " + rec + " --width 160 --frame-height 20 --frames 30"), 0);
  const std::string outputs = " --ply " + (dir / "s.ply").string() + " --heightmap " + (dir / "h.png").string();
  const std::string head = "replay " + rec + " -H 20 -q --frames ";
  expect_refused(head + "10:10" + outputs, dir, "START must be below END");
  expect_refused(head + "12:3" + outputs, dir, "START must be below END");
  expect_refused(head + "25:31" + outputs, dir, "rec.tiff: --frames 25:31 is beyond the recording's 30 frames");
  expect_refused(head + "ten:20" + outputs, dir, "is not a frame number");
  expect_refused(head + "5" + outputs, dir, "expected START:END");
  expect_refused(head + "0:10 --loops 2" + outputs, dir, "expected one pass");
  expect_refused(head + "0:10 --preview " + (dir / "p.png").string() + outputs, dir, "preview");
  // 16-bit frames whose bits the file does not record: the whole replay infers them from its first batch.
  const std::string deep = (dir / "deep.tiff").string();
  ASSERT_EQ(run_cli("synth " + deep + " --width 160 --frame-height 20 --frames 12 --depth 12 --no-bits-tags"), 0);
  expect_refused("replay " + deep + " -H 20 -q --frames 4:8 --ply " + (dir / "d.ply").string(), dir, "expected --pixel-bits N");
  std::string out;
  EXPECT_EQ(run_cli("replay " + deep + " -H 20 -q --frames 4:8 --pixel-bits 12 --ply " + (dir / "d.ply").string(), &out), 0) << out;
}

}  // namespace
}  // namespace stripeline
