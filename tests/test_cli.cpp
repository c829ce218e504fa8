// The `stripeline` program end to end: run, synth, replay, and the bad-input
// matrix (exit 2, one line naming the file, nothing half-written left).
#include <gtest/gtest.h>
#include <tiffio.h>

#include <fstream>
#include <iterator>
#include <algorithm>
#include <regex>
#include <cmath>
#include <map>
#include <set>

#include "io/image_reader.h"
#include "io/image_writer.h"
#include "io/metadata_reader.h"
#include "io/ply_writer.h"
#include "stages/backend.h"
#include "test_helpers.h"

using namespace stripeline;
using test::run_cli;
using test::TempDir;

namespace {

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::uint64_t json_number(const std::string& json, const std::string& key) {
  std::smatch m;
  if (!std::regex_search(json, m, std::regex("\"" + key + "\": ([0-9]+)"))) return ~0ull;
  return std::stoull(m[1]);
}

void write_bytes(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary);
  out << bytes;
}

// A small demo config so the CLI tests stay fast.
std::filesystem::path small_config(const TempDir& dir, const std::string& extra = "") {
  const auto path = dir / "small.toml";
  write_bytes(path, "[synthetic]\nwidth = 320\nframe_height = 40\nframes = 45\n[processing]\nbatch_frames = 10\n" + extra);
  return path;
}

}  // namespace

TEST(Cli, RunWritesEveryOutputUnderOut) {
  TempDir dir;
  std::string out;
  ASSERT_EQ(run_cli("run --quiet --config " + small_config(dir).string() + " --out " + (dir / "out").string(), &out), 0) << out;
  for (const char* name : {"scan.ply", "heightmap.png", "preview.png", "summary.json"})
    EXPECT_TRUE(std::filesystem::exists(dir / "out" / name)) << name << "\n" << out;
  EXPECT_NE(out.find("profiles 45"), std::string::npos) << out;
  const std::string summary = read_text(dir / "out" / "summary.json");
  const auto points = json_number(summary, "points");
  const auto vertices = io::read_ply(dir / "out" / "scan.ply");
  EXPECT_EQ(vertices.size(), points);
  EXPECT_GT(points, 45u * 320u * 9 / 10);
  for (const auto& v : vertices) {
    ASSERT_GE(v.x, 0.0f);
    ASSERT_LT(v.x, 320.0f);
    ASSERT_GE(v.y, 0.0f);
    ASSERT_LT(v.y, 45.0f);
    ASSERT_GE(v.z, 0.0f);
    ASSERT_LE(v.z, 39.0f);
  }
  auto hm = io::open_image(dir / "out" / "heightmap.png");
  EXPECT_EQ(hm->info().width, 320);
  EXPECT_EQ(hm->info().height, 45);
}

TEST(Cli, CalibratedRunWritesMillimetres) {
  TempDir dir;
  std::string out;
  const auto cfg = small_config(dir, "[calibration]\nenabled = true\nx_scale = 0.5\nx_offset = 10.0\nz_scale = 0.1\n[output]\nply_format = \"ascii\"\n");
  ASSERT_EQ(run_cli("run -q --config " + cfg.string() + " --out " + (dir / "o").string(), &out), 0) << out;
  const auto v = io::read_ply(dir / "o" / "scan.ply");
  ASSERT_FALSE(v.empty());
  for (const auto& p : v) {
    ASSERT_GE(p.x, 10.0f);
    ASSERT_LE(p.x, 10.0f + 0.5f * 319);
    ASSERT_LE(p.z, 3.9f + 1e-4f);
  }
  EXPECT_NE(read_text(dir / "o" / "scan.ply").find("format ascii 1.0"), std::string::npos);
}

TEST(Cli, SynthThenReplayGivesOnePointPerDetectedColumnPerFrame) {
  TempDir dir;
  std::string out;
  ASSERT_EQ(run_cli("synth " + (dir / "rec.tiff").string() + " --width 512 --frame-height 52 --frames 30 --truth " +
                        (dir / "truth.csv").string(),
                    &out),
            0)
      << out;
  auto rec = io::open_image(dir / "rec.tiff");
  EXPECT_EQ(rec->info().width, 512);
  EXPECT_EQ(rec->info().height, 30 * 52);
  const std::string truth = read_text(dir / "truth.csv");
  EXPECT_EQ(std::count(truth.begin(), truth.end(), '\n'), 1 + 30 * 512);

  ASSERT_EQ(run_cli("replay " + (dir / "rec.tiff").string() + " --frame-height 52 -q --ply " + (dir / "r.ply").string() +
                        " --heightmap " + (dir / "r.tif").string() + " --summary " + (dir / "s.json").string(),
                    &out),
            0)
      << out;
  const auto points = json_number(read_text(dir / "s.json"), "points");
  const auto v = io::read_ply(dir / "r.ply");
  EXPECT_EQ(v.size(), points);
  // cog: at most one point per (frame, column), and every detected column has one.
  std::set<std::pair<int, int>> seen;
  for (const auto& p : v) ASSERT_TRUE(seen.insert({static_cast<int>(p.y), static_cast<int>(p.x)}).second);
  auto hm = io::open_image(dir / "r.tif");
  std::vector<std::uint16_t> codes(512 * 30);
  hm->read_rows(reinterpret_cast<std::byte*>(codes.data()), 30);
  EXPECT_EQ(static_cast<std::size_t>(std::count_if(codes.begin(), codes.end(), [](auto c) { return c != 0; })), v.size());
}

// --neighbour-columns: the outputs say the check ran; bad values are one line, exit 2.
TEST(Cli, ReplayWithTheNeighbourCheckSaysSoInItsOutputs) {
  TempDir dir;
  ASSERT_EQ(run_cli("synth " + (dir / "rec.png").string() + " --width 200 --frame-height 32 --frames 12"), 0);
  std::string out;
  ASSERT_EQ(run_cli("replay " + (dir / "rec.png").string() + " -H 32 -q --neighbour-columns 2 --ply " + (dir / "n.ply").string() +
                        " --heightmap " + (dir / "n.tif").string(), &out),
            0)
      << out;
  EXPECT_FALSE(io::read_ply(dir / "n.ply").empty());
  for (const char* f : {"n.ply", "n.tif"}) {  // the metadata document of each (core/metadata.h)
    const metadata::Json d = io::read_metadata(dir / f);
    EXPECT_EQ(d["neighbour_check"]["columns"], 2) << f << ": " << d.dump();
    EXPECT_EQ(d["neighbour_check"]["step"], 2.0) << f << ": " << d.dump();
  }
  for (const std::string& bad : {std::string(" --neighbour-columns 17"), std::string(" --neighbour-columns 1 --method all")}) {
    std::string err;
    EXPECT_EQ(run_cli("replay " + (dir / "rec.png").string() + " -H 32 -q --ply " + (dir / "bad.ply").string() + bad, &err), 2) << bad;
    EXPECT_NE(err.find("neighbour_columns"), std::string::npos) << err;
    EXPECT_FALSE(std::filesystem::exists(dir / "bad.ply")) << bad;
  }
}

TEST(Cli, ReplayEveryMethod) {
  TempDir dir;
  ASSERT_EQ(run_cli("synth " + (dir / "rec.png").string() + " --width 200 --frame-height 32 --frames 12"), 0);
  for (const char* method : {"cog", "max", "window", "local-max", "all"}) {
    std::string out;
    ASSERT_EQ(run_cli("replay " + (dir / "rec.png").string() + " -H 32 -q --method " + method + " --ply " + (dir / "m.ply").string(), &out), 0)
        << method << ": " << out;
    EXPECT_FALSE(io::read_ply(dir / "m.ply").empty()) << method;
  }
}

TEST(Cli, BadInputMatrixExitsTwoWithOneLineAndLeavesNothing) {
  TempDir dir;
  ASSERT_EQ(run_cli("synth " + (dir / "good.png").string() + " --width 64 --frame-height 16 --frames 4"), 0);
  const std::string png = read_text(dir / "good.png");
  write_bytes(dir / "empty.png", "");
  write_bytes(dir / "truncated.png", png.substr(0, png.size() / 2));
  write_bytes(dir / "corrupt.tiff", "II*\0garbage garbage garbage");
  write_bytes(dir / "absurd.pgm", "P5\n100000000 100000000\n255\n");
  write_bytes(dir / "maxval.pgm", "P5\n4 4\n70000\n");
  write_bytes(dir / "odd.raw", std::string(100, '\x10'));
  const std::uint8_t rgb[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  (void)rgb;
  struct Case {
    std::string args;
    std::string names;  // the message must name this
  };
  const std::string out_ply = " --ply " + (dir / "never.ply").string();
  const std::vector<Case> cases = {
      {"replay " + (dir / "missing.png").string() + " -H 16" + out_ply, "missing.png"},
      {"replay " + (dir / "empty.png").string() + " -H 16" + out_ply, "empty.png"},
      {"replay " + (dir / "truncated.png").string() + " -H 16" + out_ply, "truncated.png"},
      {"replay " + (dir / "corrupt.tiff").string() + " -H 16" + out_ply, "corrupt.tiff"},
      {"replay " + (dir / "absurd.pgm").string() + " -H 16" + out_ply, "absurd.pgm"},
      {"replay " + (dir / "maxval.pgm").string() + " -H 4" + out_ply, "maxval.pgm"},
      {"replay " + (dir / "odd.raw").string() + " -H 4 --raw-width 7" + out_ply, "odd.raw"},
      {"replay " + (dir / "good.png").string() + " -H 15" + out_ply, "good.png"},
      {"replay " + (dir / "good.png").string() + " -H 16 --method gauss" + out_ply, "gauss"},
      {"replay " + (dir / "good.png").string() + " -H 16 --blur 4" + out_ply, "blur"},
      {"replay " + (dir / "good.png").string() + " -H 16 --ply /nonexistent-dir/x.ply", "/nonexistent-dir/x.ply"},
      {"run --config " + (dir / "nope.toml").string(), "nope.toml"},
      {"replay", "input"},
      {"frobnicate", "frobnicate"},
  };
  for (const auto& c : cases) {
    std::string out;
    EXPECT_EQ(run_cli(c.args, &out), 2) << c.args << "\n" << out;
    EXPECT_NE(out.find(c.names), std::string::npos) << c.args << "\n" << out;
    EXPECT_EQ(out.find("terminate"), std::string::npos) << out;
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "never.ply"));
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << "temporary left: " << e.path();
}

TEST(Cli, CudaBackendWithoutGpuIsACleanError) {
  if (cuda_available()) GTEST_SKIP() << "a GPU is present: " << cuda_status();
  TempDir dir;
  std::string out;
  EXPECT_EQ(run_cli("run -q --backend cuda --config " + small_config(dir).string() + " --out " + (dir / "o").string(), &out), 2) << out;
  EXPECT_NE(out.find("cuda"), std::string::npos) << out;
  EXPECT_FALSE(std::filesystem::exists(dir / "o" / "scan.ply"));
}

TEST(Cli, PlyOpensInOpen3d) {
  // Debian's python3 (python3-open3d) rather than whatever python3 is first on PATH.
  const std::string python = std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  if (std::system((python + " -c 'import open3d' >/dev/null 2>&1").c_str()) != 0)
    GTEST_SKIP() << "python3-open3d is not installed (scripts/setup-debian.sh --tests installs it)";
  TempDir dir;
  ASSERT_EQ(run_cli("run -q --config " + small_config(dir).string() + " --out " + (dir / "o").string()), 0);
  const auto n = io::read_ply(dir / "o" / "scan.ply").size();
  const std::string script = "import open3d as o3d, sys; p = o3d.io.read_point_cloud(sys.argv[1]); print(len(p.points))";
  const std::string cmd = python + " -c '" + script + "' " + (dir / "o" / "scan.ply").string();
  FILE* pipe = ::popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  char buf[64] = {};
  const std::size_t got = std::fread(buf, 1, sizeof buf - 1, pipe);
  ::pclose(pipe);
  ASSERT_GT(got, 0u);
  EXPECT_EQ(std::stoull(buf), n);
}

TEST(Cli, VersionSaysWhatWasBuiltInAndGlobalFlagsWorkAfterTheCommand) {
  std::string out;
  ASSERT_EQ(run_cli("--version", &out), 0) << out;
  EXPECT_NE(out.find("stripeline " STRIPELINE_VERSION), std::string::npos) << out;
  EXPECT_NE(out.find("backends: CPU"), std::string::npos) << out;
#if STRIPELINE_HAVE_CUDA
  EXPECT_NE(out.find("(sm "), std::string::npos) << out;  // the CUDA architectures built
#else
  EXPECT_NE(out.find("no CUDA"), std::string::npos) << out;
#endif
  EXPECT_NE(out.find("stream: ZeroMQ"), std::string::npos) << out;
  TempDir dir;
  // -v before and after the subcommand alike.
  EXPECT_EQ(run_cli("-v synth " + (dir / "a.tiff").string() + " --frames 3", &out), 0) << out;
  EXPECT_EQ(run_cli("synth " + (dir / "b.tiff").string() + " --frames 3 -v", &out), 0) << out;
  EXPECT_EQ(run_cli("synth " + (dir / "c.tiff").string() + " --frames 3 --no-such-flag", &out), 2) << out;
}

// ---------------------------------------------------------------------------
// The organised X/Y/Z export (--xyz-tiff): float32 TIFF, 3 separate planes,
// frames x width, NaN = no point; each point the PLY's slot-0 vertex.

namespace {
struct XyzPlanes {
  std::uint32_t width = 0, height = 0;
  std::uint16_t samples = 0, bits = 0, format = 0, planar = 0;
  std::string description;
  std::vector<float> plane[3];
};

XyzPlanes read_xyz_tiff(const std::filesystem::path& path) {
  XyzPlanes r;
  TIFF* t = TIFFOpen(path.c_str(), "r");
  if (t == nullptr) return r;
  TIFFGetField(t, TIFFTAG_IMAGEWIDTH, &r.width);
  TIFFGetField(t, TIFFTAG_IMAGELENGTH, &r.height);
  TIFFGetField(t, TIFFTAG_SAMPLESPERPIXEL, &r.samples);
  TIFFGetField(t, TIFFTAG_BITSPERSAMPLE, &r.bits);
  TIFFGetField(t, TIFFTAG_SAMPLEFORMAT, &r.format);
  TIFFGetField(t, TIFFTAG_PLANARCONFIG, &r.planar);
  char* desc = nullptr;
  if (TIFFGetField(t, TIFFTAG_IMAGEDESCRIPTION, &desc) == 1 && desc) r.description = desc;
  if (r.samples == 3 && r.planar == PLANARCONFIG_SEPARATE) {
    for (std::uint16_t k = 0; k < 3; ++k) {
      r.plane[k].resize(static_cast<std::size_t>(r.width) * r.height);
      for (std::uint32_t y = 0; y < r.height; ++y) TIFFReadScanline(t, r.plane[k].data() + static_cast<std::size_t>(y) * r.width, y, k);
    }
  }
  TIFFClose(t);
  return r;
}
}  // namespace

TEST(Cli, XyzTiffIsTheOrganisedPrimaryPointCloud) {
  TempDir dir;
  std::string out;
  ASSERT_EQ(run_cli("synth " + (dir / "rec.tiff").string() + " --width 203 --frames 37 --reflection 0.2", &out), 0) << out;
  ASSERT_EQ(run_cli("replay " + (dir / "rec.tiff").string() + " -H 52 -q --method local-max --selection all --ply " +
                        (dir / "p.ply").string() + " --xyz-tiff " + (dir / "xyz.tif").string(),
                    &out),
            0)
      << out;
  const XyzPlanes xyz = read_xyz_tiff(dir / "xyz.tif");
  ASSERT_EQ(xyz.width, 203u);
  ASSERT_EQ(xyz.height, 37u);
  ASSERT_EQ(xyz.samples, 3);
  EXPECT_EQ(xyz.bits, 32);
  EXPECT_EQ(xyz.format, SAMPLEFORMAT_IEEEFP);
  EXPECT_EQ(xyz.planar, PLANARCONFIG_SEPARATE);
  EXPECT_EQ(metadata::find_document(xyz.description).value("stripeline", std::string()), "xyz") << xyz.description;
  // The PLY's slot-0 vertices, by (frame, column); slots > 0 exist (reflections) and are not in the TIFF.
  const auto v = io::read_ply(dir / "p.ply");
  std::map<std::pair<int, int>, io::PlyVertex> primary;
  std::size_t secondary = 0;
  for (const auto& p : v) {
    EXPECT_GT(p.width, 0) << "a detected point has a stripe width";
    if (p.slot == 0) {
      EXPECT_TRUE(primary.insert({{static_cast<int>(p.y), static_cast<int>(p.x)}, p}).second);
    } else {
      ++secondary;
    }
  }
  EXPECT_GT(secondary, 0u) << "local-max + all on a recording with reflections: slots beyond 0";
  std::size_t points = 0;
  for (std::uint32_t f = 0; f < xyz.height; ++f) {
    for (std::uint32_t c = 0; c < xyz.width; ++c) {
      const std::size_t i = static_cast<std::size_t>(f) * xyz.width + c;
      const auto it = primary.find({static_cast<int>(f), static_cast<int>(c)});
      if (it == primary.end()) {
        ASSERT_TRUE(std::isnan(xyz.plane[0][i]) && std::isnan(xyz.plane[1][i]) && std::isnan(xyz.plane[2][i])) << f << "," << c;
        continue;
      }
      ++points;
      ASSERT_EQ(xyz.plane[0][i], it->second.x) << f << "," << c;
      ASSERT_EQ(xyz.plane[1][i], static_cast<float>(it->second.y)) << f << "," << c;
      ASSERT_EQ(xyz.plane[2][i], it->second.z) << f << "," << c;
    }
  }
  EXPECT_EQ(points, primary.size());
  EXPECT_GT(points, 37u * 203u / 2);
}

TEST(Cli, XyzTiffNeedsATiffName) {
  TempDir dir;
  std::string out;
  EXPECT_EQ(run_cli("run -q --config " + small_config(dir).string() + " --out " + (dir / "o").string() + " --xyz-tiff xyz.png", &out), 2) << out;
  EXPECT_NE(out.find("xyz_tiff"), std::string::npos) << out;
  ASSERT_EQ(run_cli("run -q --config " + small_config(dir, "[output]\nxyz_tiff = \"xyz.tif\"\n").string() + " --out " + (dir / "o").string(), &out), 0) << out;
  EXPECT_EQ(read_xyz_tiff(dir / "o" / "xyz.tif").height, 45u);
}
