// The one metadata serializer (core/metadata.h): every output kind's
// metadata read back with one parser (io::read_metadata) carries the same
// fields; `stripeline describe` tells the settings apart and gives the same
// facts as the Python reader; no hand-built JSON left in the sources; one
// version for the program and the Python package.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>

#include "calibration/calibration_file.h"
#include "core/errors.h"
#include "core/metadata.h"
#include "example_models.h"
#include "io/metadata_reader.h"
#include "test_helpers.h"

using namespace stripeline;
using test::run_cli;
using test::TempDir;

namespace {

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A recording of 12 frames, 320 x 40.
std::filesystem::path recording(const TempDir& dir) {
  const auto p = dir / "rec.tiff";
  EXPECT_EQ(run_cli("synth " + p.string() + " --width 320 --frame-height 40 --frames 12"), 0);
  return p;
}

std::filesystem::path calibration_file(const TempDir& dir) {
  const auto p = dir / "cal.toml";
  save_calibration(p, test::realistic_calibration_file());
  return p;
}

// The fields every scan document carries, as one object to compare.
metadata::Json common(const metadata::Json& d) {
  metadata::Json c;
  for (const char* k : {"schema", "software", "source", "method", "width", "frame_height", "unit", "point_unit", "calibration", "neighbour_check", "line_model"})
    if (d.contains(k)) c[k] = d[k];
  return c;
}

}  // namespace

TEST(Metadata, EveryOutputKindReadsBackWithOneParserAndTheSameFields) {
  TempDir dir;
  const auto rec = recording(dir);
  const auto cal = calibration_file(dir);
  for (const bool calibrated : {false, true}) {
    SCOPED_TRACE(calibrated ? "sheet-of-light calibration" : "no calibration");
    const std::string tag = calibrated ? "cal-" : "raw-";
    std::string args = "replay " + rec.string() + " -H 40 -q --heightmap " + (dir / (tag + "h.png")).string() + " --ply " +
                       (dir / (tag + "p.ply")).string() + " --xyz-tiff " + (dir / (tag + "x.tif")).string() + " --summary " +
                       (dir / (tag + "s.json")).string();
    std::vector<std::pair<std::string, std::string>> kinds = {
        {tag + "h.png", "heightmap"}, {tag + "p.ply", "point-cloud"}, {tag + "x.tif", "xyz"}, {tag + "s.json", "summary"}};
    if (calibrated) {
      args += " --calibration " + cal.string() + " --roi-offset 0,428 --range-map " + (dir / "r.tif").string() + " --range-codes " +
              (dir / "rc.png").string() + " --range-grid -50:50:0.5";
      kinds.push_back({"r.tif", "range-map"});
      kinds.push_back({"rc.png", "range-map"});
    }
    std::string out;
    ASSERT_EQ(run_cli(args, &out), 0) << out;
    metadata::Json first;
    for (const auto& [file, kind] : kinds) {
      SCOPED_TRACE(file);
      const metadata::Json d = io::read_metadata(dir / file);
      EXPECT_EQ(d["stripeline"], kind);
      EXPECT_EQ(d["schema"], metadata::kSchema);
      EXPECT_EQ(d["software"], "stripeline " STRIPELINE_VERSION);
      EXPECT_NE(d["source"].get<std::string>().find("rec.tiff"), std::string::npos) << d.dump();
      EXPECT_EQ(d["frame_height"], 40);
      EXPECT_EQ(d["width"], 320);
      EXPECT_EQ(d["calibration"]["model"], calibrated ? "sheet-of-light" : "none");
      EXPECT_EQ(d["point_unit"], calibrated ? "mm" : "px");
      if (first.is_null()) first = common(d);
      EXPECT_EQ(common(d), first) << "differs from " << kinds.front().first;
    }
    // The recording says what it is, through the same parser.
    const metadata::Json r = io::read_metadata(rec);
    EXPECT_EQ(r["stripeline"], "recording");
    EXPECT_EQ(r["frame_height"], 40);
    EXPECT_EQ(r["frames"], 12);
  }
}

TEST(Metadata, TextIsOneAsciiLineWhateverTheSourceName) {
  metadata::Scan s;
  s.source = std::string("file \"q\"\\ \n\t\x01 caf\xc3\xa9 \xff bad utf-8");
  const std::string t = metadata::text(metadata::scan_document("xyz", s));
  EXPECT_EQ(t.find('\n'), std::string::npos) << t;
  for (const unsigned char c : t) EXPECT_TRUE(c >= 0x20 && c < 0x7f) << t;
  const metadata::Json back = metadata::parse(t, "test");
  EXPECT_EQ(back["stripeline"], "xyz");
  // Control characters and quotes survive (the old XYZ escaper dropped control characters).
  EXPECT_NE(back["source"].get<std::string>().find("\"q\"\\ \n\t\x01 caf\xc3\xa9"), std::string::npos) << back["source"];
  EXPECT_THROW(metadata::parse("[1, 2]", "x.json"), InputError);
  EXPECT_TRUE(metadata::find_document("free text").is_null());
  const metadata::Json old = metadata::find_document("{\"stripeline\": {\"frame_height\": 52, \"frames\": 10}}");
  EXPECT_EQ(old["stripeline"], "recording");
  EXPECT_EQ(old["frame_height"], 52);
}

TEST(Describe, TellsAHeightBits8MapFromADefaultOne) {
  TempDir dir;
  const auto rec = recording(dir);
  std::string out;
  ASSERT_EQ(run_cli("replay " + rec.string() + " -H 40 -q --heightmap " + (dir / "d.png").string()), 0);
  ASSERT_EQ(run_cli("replay " + rec.string() + " -H 40 -q --height-bits 8 --heightmap " + (dir / "h8.png").string()), 0);
  ASSERT_EQ(run_cli("describe " + (dir / "d.png").string() + " " + (dir / "h8.png").string(), &out), 0) << out;
  const std::size_t second = out.find("h8.png: heightmap (PNG)");
  ASSERT_NE(second, std::string::npos) << out;
  EXPECT_NE(out.substr(0, second).find("  height_bits: 6\n"), std::string::npos) << out;
  EXPECT_NE(out.substr(second).find("  height_bits: 8\n"), std::string::npos) << out;
  EXPECT_EQ(out.substr(second).find("  height_bits: 6\n"), std::string::npos) << out;
}

TEST(Describe, TellsACalibratedPlyFromAnUncalibratedOne) {
  TempDir dir;
  const auto rec = recording(dir);
  const auto cal = calibration_file(dir);
  std::string out;
  ASSERT_EQ(run_cli("replay " + rec.string() + " -H 40 -q --ply " + (dir / "raw.ply").string()), 0);
  ASSERT_EQ(run_cli("replay " + rec.string() + " -H 40 -q --ply " + (dir / "mm.ply").string() + " --calibration " + cal.string() +
                    " --roi-offset 0,428"),
            0);
  ASSERT_EQ(run_cli("describe " + (dir / "raw.ply").string(), &out), 0) << out;
  EXPECT_NE(out.find("  calibration.model: none\n"), std::string::npos) << out;
  EXPECT_NE(out.find("  point_unit: px\n"), std::string::npos) << out;
  ASSERT_EQ(run_cli("describe " + (dir / "mm.ply").string(), &out), 0) << out;
  EXPECT_NE(out.find("  calibration.model: sheet-of-light\n"), std::string::npos) << out;
  EXPECT_NE(out.find("  calibration.id: " + test::realistic_calibration_file().id), std::string::npos) << out;
  EXPECT_NE(out.find("  calibration.roi_offset: [0,428]\n"), std::string::npos) << out;
  EXPECT_NE(out.find("  point_unit: mm\n"), std::string::npos) << out;
  // A file that is not ours: one line naming it, exit 2.
  ASSERT_EQ(run_cli("describe " + cal.string() + " " + (dir / "missing.png").string(), &out), 2) << out;
  EXPECT_NE(out.find("missing.png"), std::string::npos) << out;
  EXPECT_NE(out.find("cal.toml: calibration (TOML)"), std::string::npos) << out;
}

// `stripeline describe --json` and python/stripeline/describe.py give the
// same facts for every kind of file.
TEST(Describe, GivesTheSameFactsAsThePythonReader) {
  if (test::run_cli_command("python3 -c 'import tomllib'") != 0) GTEST_SKIP() << "python3 >= 3.11 (tomllib) not found";
  TempDir dir;
  const auto rec = recording(dir);
  const auto cal = calibration_file(dir);
  std::string out;
  ASSERT_EQ(run_cli("replay " + rec.string() + " -H 40 -q --neighbour-columns 2 --heightmap " + (dir / "h.png").string() + " --ply " +
                        (dir / "p.ply").string() + " --xyz-tiff " + (dir / "x.tif").string() + " --summary " + (dir / "s.json").string() +
                        " --calibration " + cal.string() + " --roi-offset 0,428 --range-map " + (dir / "r.tif").string() +
                        " --range-grid -50:50:0.5",
                    &out),
            0)
      << out;
  std::string files;
  for (const char* f : {"h.png", "p.ply", "x.tif", "s.json", "r.tif", "rec.tiff", "cal.toml"}) files += " " + (dir / f).string();
  std::string cpp, py;
  ASSERT_EQ(run_cli("describe --json" + files, &cpp), 0) << cpp;
  // describe.py alone (the package's __init__ needs pyzmq and numpy, this reader does not).
  const std::string script = test::source_dir() + "/python/stripeline/describe.py";
  ASSERT_EQ(test::run_cli_command("python3 -c 'import importlib.util, sys; s = importlib.util.spec_from_file_location(\"d\", sys.argv[1]); "
                                  "m = importlib.util.module_from_spec(s); s.loader.exec_module(m); sys.exit(m.main(sys.argv[2:]))' " +
                                      script + files,
                                  &py),
            0)
      << py;
  std::istringstream a(cpp), b(py);
  std::string la, lb;
  int n = 0;
  while (std::getline(a, la)) {
    ASSERT_TRUE(std::getline(b, lb)) << "python gave fewer lines:\n" << py;
    const nlohmann::json ja = nlohmann::json::parse(la), jb = nlohmann::json::parse(lb);
    EXPECT_EQ(ja, jb) << "C++:    " << la << "\nPython: " << lb;
    ++n;
  }
  EXPECT_EQ(n, 7) << cpp;
}

// No JSON built by hand outside tests: an escaped quoted key after '{' or
// ',' (`{\"key\": ` / `, \"key\": `) is a JSON object written as a C++ string
// literal. Messages that quote a value (`= \"x\": ...`) do not match.
TEST(Metadata, NoHandBuiltJsonInTheSources) {
  const std::regex hand_built(R"((\{|,) ?\\"[A-Za-z_][A-Za-z0-9_]*\\" ?:)");
  // The pattern finds what it is meant to find, and not a quoted value in a message.
  EXPECT_TRUE(std::regex_search(R"(s = "{\"stripeline\": \"xyz\", \"unit\": \"")", hand_built));
  EXPECT_TRUE(std::regex_search(R"(x + ", \"calibration\": " + y)", hand_built));
  EXPECT_FALSE(std::regex_search(R"(fail("is required with trigger = \"software\": it is"))", hand_built));
  std::vector<std::string> found;
  int files = 0;
  for (const char* folder : {"core", "kernels", "io", "acquisition", "stages", "pipeline", "calibration", "measure", "streaming", "app", "daemon", "tools", "bench"}) {
    const std::filesystem::path root = std::filesystem::path(test::source_dir()) / folder;
    if (!std::filesystem::exists(root)) continue;
    for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
      const std::string ext = e.path().extension().string();
      if (!e.is_regular_file() || (ext != ".cpp" && ext != ".h" && ext != ".cu" && ext != ".cuh")) continue;
      ++files;
      std::istringstream in(read_text(e.path()));
      std::string line;
      for (int n = 1; std::getline(in, line); ++n)
        if (std::regex_search(line, hand_built)) found.push_back(e.path().string() + ":" + std::to_string(n) + ": " + line);
    }
  }
  EXPECT_GT(files, 100);
  for (const auto& f : found) ADD_FAILURE() << "hand-built JSON (use core/metadata.h or nlohmann::json): " << f;
}

// One version: the CMake project's; the Python package follows it.
TEST(Version, PackageFollowsProgram) {
  const std::string dir = test::source_dir();
  std::smatch m;
  const std::string cmake = read_text(dir + "/CMakeLists.txt");
  ASSERT_TRUE(std::regex_search(cmake, m, std::regex(R"(project\(stripeline VERSION ([0-9.]+))")));
  EXPECT_EQ(m[1], STRIPELINE_VERSION);
  const std::string pyproject = read_text(dir + "/python/pyproject.toml");
  ASSERT_TRUE(std::regex_search(pyproject, m, std::regex(R"(\nversion = "([^"]+)\")")));
  EXPECT_EQ(m[1], STRIPELINE_VERSION) << "python/pyproject.toml";
  const std::string init = read_text(dir + "/python/stripeline/__init__.py");
  ASSERT_TRUE(std::regex_search(init, m, std::regex(R"(__version__ = "([^"]+)\")")));
  EXPECT_EQ(m[1], STRIPELINE_VERSION) << "python/stripeline/__init__.py";
  std::string out;
  ASSERT_EQ(run_cli("--version", &out), 0);
  EXPECT_EQ(out.rfind("stripeline " STRIPELINE_VERSION "\n", 0), 0u) << out;
}
