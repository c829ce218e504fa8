// TOML configuration: the shipped configs parse, every mistake is one clear
// ConfigError naming the file and the key.
#include <gtest/gtest.h>

#include "core/errors.h"
#include "pipeline/config.h"
#include "test_helpers.h"

using namespace stripeline;

namespace {
std::string error_of(const std::string& text) {
  try {
    parse_config(text, "test.toml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(Config, DemoConfigEqualsBuiltInDefaults) {
  const Config file = load_config(test::source_dir() + "/configs/demo.toml");
  const Config def = default_config();
  EXPECT_EQ(file.source, def.source);
  EXPECT_EQ(file.synthetic.width, def.synthetic.width);
  EXPECT_EQ(file.synthetic.frame_height, def.synthetic.frame_height);
  EXPECT_EQ(file.synthetic.frames, def.synthetic.frames);
  EXPECT_EQ(file.synthetic.seed, def.synthetic.seed);
  EXPECT_DOUBLE_EQ(file.synthetic.beam_sigma, def.synthetic.beam_sigma);
  EXPECT_DOUBLE_EQ(file.synthetic.peak, def.synthetic.peak);
  EXPECT_DOUBLE_EQ(file.synthetic.background, def.synthetic.background);
  EXPECT_DOUBLE_EQ(file.synthetic.noise, def.synthetic.noise);
  EXPECT_DOUBLE_EQ(file.synthetic.occlusion, def.synthetic.occlusion);
  EXPECT_DOUBLE_EQ(file.synthetic.reflection, def.synthetic.reflection);
  EXPECT_EQ(file.pipeline.batch_frames, def.pipeline.batch_frames);
  EXPECT_EQ(file.pipeline.buffers, def.pipeline.buffers);
  EXPECT_EQ(file.pipeline.chain.blur_size, def.pipeline.chain.blur_size);
  EXPECT_EQ(file.pipeline.chain.column.threshold, def.pipeline.chain.column.threshold);
  EXPECT_EQ(file.pipeline.chain.column.min_peak, def.pipeline.chain.column.min_peak);
  EXPECT_EQ(file.pipeline.chain.column.method, def.pipeline.chain.column.method);
  EXPECT_EQ(file.output.dir, def.output.dir);
  EXPECT_EQ(file.output.ply, def.output.ply);
  EXPECT_EQ(file.output.heightmap, def.output.heightmap);
  EXPECT_EQ(file.output.height_bits, def.output.height_bits);
  EXPECT_EQ(file.pipeline.calibration.enabled, def.pipeline.calibration.enabled);
}

TEST(Config, ReplayConfigParses) {
  const Config c = load_config(test::source_dir() + "/configs/replay.toml");
  EXPECT_EQ(c.source, SourceKind::File);
  EXPECT_EQ(c.file.frame_height, 52);
  EXPECT_EQ(c.output.heightmap, "heightmap.tif");
  EXPECT_DOUBLE_EQ(c.pipeline.calibration.x_scale, 0.05);
}

TEST(Config, OverridesApply) {
  const Config c = parse_config(
      "[processing]\nmethod = \"local-max\"\nselection = \"all\"\nthreshold = 60\nblur_size = 0\n"
      "[calibration]\nenabled = true\nz_scale = 0.02\n[output]\nply_format = \"ascii\"\n",
      "t.toml");
  EXPECT_EQ(c.pipeline.chain.column.method, ColumnMethod::LocalMax);
  EXPECT_EQ(c.pipeline.chain.column.selection, SpotSelection::All);
  EXPECT_EQ(c.pipeline.chain.column.threshold, 60u);
  EXPECT_EQ(c.pipeline.chain.blur_size, 0);
  EXPECT_TRUE(c.pipeline.calibration.enabled);
  EXPECT_DOUBLE_EQ(c.pipeline.calibration.z(10.0), 0.2);
  EXPECT_EQ(c.output.ply_encoding, io::PlyEncoding::Ascii);
}

TEST(Config, MistakesNameTheFileAndTheKey) {
  struct Case {
    const char* text;
    const char* must_mention;
  };
  for (const Case c : {Case{"[processing]\nthreshhold = 40\n", "threshhold"},
                       Case{"[processing]\nthreshold = \"high\"\n", "threshold"},
                       Case{"[processing]\nmethod = \"gauss\"\n", "gauss"},
                       Case{"[processing]\nbatch_frames = 0\n", "batch_frames"},
                       Case{"[processing]\nbackend = \"opencl\"\n", "opencl"},
                       Case{"[synthetic]\nbeam_sigma = -1.0\n", "beam_sigma"},
                       Case{"[synthetic]\ndepth = 12\n", "depth"},
                       Case{"[output]\nheight_bits = 9\n", "height_bits"},
                       Case{"[output]\nply_format = \"xml\"\n", "ply_format"},
                       Case{"[source]\nkind = \"file\"\n", "path"},
                       Case{"[source]\nkind = \"camera\"\n", "camera"},
                       Case{"[extra]\na = 1\n", "extra"},
                       Case{"[processing\nthreshold = 4\n", "test.toml:1"},
                       Case{"[processing]\nthreshold = 99999999999\n", "threshold"},
                       Case{"[output]\nheightmap_filters = [\"median 4\"]\n", "heightmap_filters"},
                       Case{"[output]\nheightmap_filters = \"median 3\"\n", "heightmap_filters"}}) {
    const std::string err = error_of(c.text);
    ASSERT_FALSE(err.empty()) << "accepted: " << c.text;
    EXPECT_NE(err.find("test.toml"), std::string::npos) << err;
    EXPECT_NE(err.find(c.must_mention), std::string::npos) << err;
  }
}

TEST(Config, MissingFileIsAnInputError) {
  EXPECT_THROW(load_config("/nonexistent/stripeline.toml"), InputError);
}
