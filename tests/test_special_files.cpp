// Output targets that are not regular files: a FIFO, a character device, a
// symbolic link to one, and "-" (standard output) are written in place, never
// renamed over; writers that seek back (PLY, TIFF) refuse them up front.
// Everything happens in a temporary directory: the device node is a copy of
// /dev/null's numbers made there, never the real /dev.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <fstream>
#include <iterator>
#include <thread>

#include "core/errors.h"
#include "io/atomic_file.h"
#include "io/ply_writer.h"
#include "test_helpers.h"

using namespace stripeline;
using test::TempDir;
namespace fs = std::filesystem;

namespace {

// Reads a FIFO to its end on a thread (a writer's open blocks until then).
class FifoReader {
 public:
  explicit FifoReader(const fs::path& fifo)
      : thread_([this, fifo] {
          std::ifstream in(fifo, std::ios::binary);
          text_.assign(std::istreambuf_iterator<char>(in), {});
        }) {}
  std::string text() {
    thread_.join();
    return text_;
  }

 private:
  std::string text_;
  std::thread thread_;
};

bool only(const TempDir& dir, const std::vector<std::string>& names) { return dir.entries() == names; }

}  // namespace

TEST(SpecialFiles, AFifoIsWrittenInPlaceAndStaysAFifo) {
  TempDir dir;
  const fs::path fifo = dir / "summary.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  FifoReader reader(fifo);
  io::write_file_atomically(fifo, "{\"frames\": 3}\n");
  EXPECT_EQ(reader.text(), "{\"frames\": 3}\n");
  EXPECT_TRUE(fs::is_fifo(fs::symlink_status(fifo))) << "the FIFO was replaced";
  EXPECT_TRUE(only(dir, {"summary.json"})) << "a temporary was left beside it";
}

TEST(SpecialFiles, ASymlinkToAFifoStaysASymlink) {
  TempDir dir;
  const fs::path fifo = dir / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  fs::create_symlink(fifo, dir / "out.json");
  FifoReader reader(fifo);
  io::write_file_atomically(dir / "out.json", "abc");
  EXPECT_EQ(reader.text(), "abc");
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(dir / "out.json")));
  EXPECT_TRUE(fs::is_fifo(fs::symlink_status(fifo)));
}

TEST(SpecialFiles, ACharacterDeviceIsWrittenInPlace) {
  TempDir dir;
  const fs::path null_copy = dir / "null";
  if (::mknod(null_copy.c_str(), S_IFCHR | 0666, ::makedev(1, 3)) != 0)
    GTEST_SKIP() << "cannot make a device node here (" << std::strerror(errno) << "): needs root or CAP_MKNOD";
  if (!fs::is_character_file(fs::status(null_copy))) GTEST_SKIP() << "device nodes are not honoured on this filesystem (nodev?)";
  std::ofstream probe(null_copy);
  if (!probe) GTEST_SKIP() << "the device node cannot be opened here (mounted nodev)";
  probe.close();
  io::write_file_atomically(null_copy, "discarded");
  EXPECT_TRUE(fs::is_character_file(fs::symlink_status(null_copy))) << "the device node was replaced";
  EXPECT_TRUE(only(dir, {"null"}));
}

TEST(SpecialFiles, APlyToAFifoIsRefusedUpFrontNamingIt) {
  TempDir dir;
  const fs::path fifo = dir / "scan.ply";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  FifoReader reader(fifo);
  try {
    io::PlyWriter writer(fifo, io::PlyEncoding::BinaryLittleEndian);
    FAIL() << "a PLY was started on a FIFO";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("scan.ply"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("PLY"), std::string::npos) << e.what();
  }
  EXPECT_EQ(reader.text(), "");
  EXPECT_TRUE(fs::is_fifo(fs::symlink_status(fifo)));
}

TEST(SpecialFiles, DashMeansStandardOutputForTheSummary) {
  TempDir dir;
  std::string out;
  ASSERT_EQ(test::run_cli("synth " + (dir / "rec.tiff").string() + " --frames 4", &out), 0) << out;
  ASSERT_EQ(test::run_cli_command("cd " + dir.path().string() + " && " + test::binary_path() + " replay rec.tiff -H 52 -q --summary -", &out), 0)
      << out;
  EXPECT_NE(out.find("\"frames\""), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(dir / "-")) << "a file named '-' was created";
}
