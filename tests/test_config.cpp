// TOML configuration: the shipped configs parse, every mistake is one clear
// ConfigError naming the file and the key.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "core/errors.h"
#include "app/config.h"
#include "app/settings.h"
#include "app/sources.h"
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

TEST(Config, CameraExampleParsesWithItsDocumentedValues) {
  const Config c = load_config(test::source_dir() + "/configs/camera.toml");
  EXPECT_EQ(c.source, SourceKind::Camera);
  const CameraConfig& k = c.camera;
  const CameraConfig defaults;
  EXPECT_EQ(k.width, 2048);
  EXPECT_EQ(k.height, 52);
  EXPECT_DOUBLE_EQ(k.frame_rate, 200.0);
  EXPECT_EQ(k.trigger, TriggerMode::FreeRun);
  EXPECT_EQ(k.storage_format(), PixelFormat::Mono8);
  // Every other key is shown with its default.
  EXPECT_EQ(k.id, defaults.id);
  EXPECT_EQ(k.offset_x, defaults.offset_x);
  EXPECT_EQ(k.pixel_format, defaults.pixel_format);
  EXPECT_EQ(k.exposure_us, defaults.exposure_us);
  EXPECT_EQ(k.gain, defaults.gain);
  EXPECT_EQ(k.trigger_source, defaults.trigger_source);
  EXPECT_EQ(k.trigger_activation, defaults.trigger_activation);
  EXPECT_EQ(k.packet_size, defaults.packet_size);
  EXPECT_EQ(k.packet_socket, defaults.packet_socket);
  EXPECT_EQ(k.stream_buffers, defaults.stream_buffers);
  EXPECT_EQ(k.socket_buffer, defaults.socket_buffer);
  EXPECT_EQ(k.heartbeat_timeout, defaults.heartbeat_timeout);
  EXPECT_EQ(k.flush_timeout, defaults.flush_timeout);
  EXPECT_EQ(k.gap_fill_limit, defaults.gap_fill_limit);
  EXPECT_EQ(k.frames, defaults.frames);
  EXPECT_EQ(k.reconnect_interval, defaults.reconnect_interval);
  EXPECT_TRUE(k.features.empty());
  const Config mono12 = parse_config("[camera]\npixel_format = \"Mono12\"\ntrigger = \"external\"\ntrigger_source = \"Encoder0\"\n", "t.toml");
  EXPECT_EQ(mono12.camera.storage_format(), PixelFormat::Mono16);
  EXPECT_EQ(mono12.camera.trigger, TriggerMode::External);
  EXPECT_EQ(mono12.camera.trigger_source, "Encoder0");
}

#if !defined(STRIPELINE_HAVE_ARAVIS)
TEST(Config, GrabberSectionParses) {
  const Config c = parse_config(
      "[camera]\ntransport = \"gentl\"\n[camera.gentl]\ncti = \"/opt/euresys/egrabber/cti\"\ndevice = \"PC1633/Device0\"\n"
      "frames_per_buffer = 300\ngrabber_features = [\"Device.LineTriggerSource=EIN1\"]\nbuffers = 6\n",
      "t.toml");
  EXPECT_EQ(c.camera.transport, "gentl");
  EXPECT_EQ(c.gentl.cti, "/opt/euresys/egrabber/cti");
  EXPECT_EQ(c.gentl.device, "PC1633/Device0");
  EXPECT_EQ(c.gentl.frames_per_buffer, 300);
  ASSERT_EQ(c.gentl.grabber_features.size(), 1u);
  EXPECT_EQ(c.gentl.buffers, 6);
  EXPECT_EQ(parse_config("", "t.toml").camera.transport, "aravis");
}

TEST(Config, CameraSourceWithoutAravisSaysHowToGetIt) {
  const Config c = parse_config("[source]\nkind = \"camera\"\n", "t.toml");
  try {
    make_source(c);
    FAIL() << "a camera source opened without Aravis";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("libaravis-dev"), std::string::npos) << e.what();
  }
}
#endif

TEST(Config, CalibrationFileSection) {
  const Config c = parse_config("[calibration]\nfile = \"cal/sensor.toml\"\ny_step_mm = 0.25\nroi_offset = [16, 412]\n", "test.toml");
  EXPECT_EQ(c.calibration.file, std::filesystem::path("cal/sensor.toml"));
  EXPECT_EQ(c.calibration.y_step_mm, 0.25);
  EXPECT_EQ(c.calibration.roi_x, 16);
  EXPECT_EQ(c.calibration.roi_y, 412);
  EXPECT_FALSE(c.pipeline.calibration.enabled);
  const Config none = parse_config("[calibration]\n", "test.toml");
  EXPECT_TRUE(none.calibration.file.empty());
  EXPECT_FALSE(none.calibration.roi_x.has_value());
}

TEST(Config, MistakesNameTheFileAndTheKey) {
  struct Case {
    const char* text;
    const char* must_mention;
  };
  for (const Case c : {Case{"[processing]\nthreshhold = 40\n", "threshhold"},
                       Case{"[processing]\nthreshold = \"high\"\n", "threshold"},
                       Case{"[processing]\nmethod = \"gauss\"\n", "gauss"},
                       Case{"[processing]\nbatch_frames = -1\n", "batch_frames"},
                       Case{"[processing]\nmemory_budget = \"lots\"\n", "memory_budget"},
                       Case{"[processing]\nmemory_budget = 512\n", "memory_budget"},
                       Case{"[processing]\nbackend = \"opencl\"\n", "opencl"},
                       Case{"[synthetic]\nbeam_sigma = -1.0\n", "beam_sigma"},
                       Case{"[synthetic]\ndepth = 10\n", "depth"},
                       Case{"[output]\nheight_bits = 9\n", "height_bits"},
                       Case{"[output]\nply_format = \"xml\"\n", "ply_format"},
                       Case{"[source]\nkind = \"file\"\n", "path"},
                       Case{"[source]\nkind = \"gige\"\n", "gige"},
                       Case{"[camera]\ntrigger = \"encoder\"\n", "camera.trigger"},
                       Case{"[camera]\npixel_format = \"RGB8\"\n", "camera.pixel_format"},
                       Case{"[camera]\nstream_buffers = 1\n", "camera.stream_buffers"},
                       Case{"[camera]\nframerate = 10.0\n", "framerate"},
                       Case{"[camera]\ntrigger = \"software\"\n", "camera.frame_rate"},
                       Case{"[camera]\nfeatures = [\"ExposureAuto\"]\n", "camera.features"},
                       Case{"[camera]\nheartbeat_timeout = 0.1\n", "camera.heartbeat_timeout"},
                       Case{"[camera]\ntransport = \"usb\"\n", "camera.transport"},
                       Case{"[camera]\ngentl = 3\n", "camera.gentl"},
                       Case{"[camera.gentl]\nframes_per_bufer = 300\n", "camera.gentl.frames_per_bufer"},
                       Case{"[camera.gentl]\nframes_per_buffer = -1\n", "camera.gentl.frames_per_buffer"},
                       Case{"[camera.gentl]\ngrabber_features = [\"TriggerSource\"]\n", "camera.gentl.grabber_features"},
                       Case{"[extra]\na = 1\n", "extra"},
                       Case{"[processing\nthreshold = 4\n", "test.toml:1"},
                       Case{"[processing]\nthreshold = 99999999999\n", "threshold"},
                       Case{"[output]\nheightmap_filters = [\"median 4\"]\n", "heightmap_filters"},
                       Case{"[output]\nheightmap_filters = \"median 3\"\n", "heightmap_filters"},
                       Case{"[calibration]\nfile = \"c.toml\"\ny_step_mm = -0.1\n", "calibration.y_step_mm"},
                       Case{"[calibration]\nfile = \"c.toml\"\nroi_offset = [1]\n", "calibration.roi_offset"},
                       Case{"[calibration]\nroi_offset = [-4, 2]\n", "calibration.roi_offset"},
                       Case{"[calibration]\nfile = 3\n", "calibration.file"},
                       Case{"[calibration]\nfile = \"c.toml\"\nenabled = true\n", "calibration.file"}}) {
    const std::string err = error_of(c.text);
    ASSERT_FALSE(err.empty()) << "accepted: " << c.text;
    EXPECT_NE(err.find("test.toml"), std::string::npos) << err;
    EXPECT_NE(err.find(c.must_mention), std::string::npos) << err;
  }
}

// fuzz_config found toml++ casting any float to an integer key (undefined
// beyond int64's range); integral floats in range still read as before.
TEST(Config, AFloatForAnIntegerKeyIsReadOnlyWhenIntegralAndInRange) {
  EXPECT_NE(error_of("[camera]\nwidth = 1193e063\n").find("expected an integer"), std::string::npos);
  EXPECT_NE(error_of("[camera]\nwidth = 1e308\n").find("expected an integer"), std::string::npos);
  EXPECT_NE(error_of("[camera]\nwidth = nan\n").find("expected an integer"), std::string::npos);
  EXPECT_NE(error_of("[processing]\nthreshold = 60.5\n").find("expected an integer"), std::string::npos);
  EXPECT_EQ(parse_config("[processing]\nthreshold = 60.0\n", "t.toml").pipeline.chain.column.threshold, 60u);
}

TEST(Config, MissingFileIsAnInputError) {
  EXPECT_THROW(load_config("/nonexistent/stripeline.toml"), InputError);
}

TEST(Config, NeighbourCheckKeysAreRead) {
  const Config c = parse_config("[processing]\nneighbour_columns = 3\nneighbour_step = 1.5\n", "t.toml");
  EXPECT_EQ(c.pipeline.chain.neighbour_check.columns, 3);
  EXPECT_DOUBLE_EQ(c.pipeline.chain.neighbour_check.step, 1.5);
  EXPECT_EQ(parse_config("", "t.toml").pipeline.chain.neighbour_check.columns, 0) << "off by default";
}

// ---- the settings schema (app/settings.h): one declaration per setting

// docs/settings.md is generated from the schema: a key, flag, default or help
// changed in one and not the other fails here. Regenerate with
//   stripeline settings --markdown > docs/settings.md
TEST(Config, SettingsReferenceIsUpToDate) {
  std::ifstream in(test::source_dir() + "/docs/settings.md", std::ios::binary);
  ASSERT_TRUE(in) << "docs/settings.md is missing";
  const std::string doc((std::istreambuf_iterator<char>(in)), {});
  const std::string generated = settings_markdown();
  if (doc != generated) {
    std::istringstream a(doc), b(generated);
    std::string la, lb;
    int line = 0;
    while (true) {
      ++line;
      const bool more_a = static_cast<bool>(std::getline(a, la)), more_b = static_cast<bool>(std::getline(b, lb));
      if (!more_a && !more_b) break;
      if (la != lb || more_a != more_b)
        FAIL() << "docs/settings.md differs from the schema at line " << line << ":\n  doc:    " << (more_a ? la : "(end)") << "\n  schema: "
               << (more_b ? lb : "(end)") << "\nregenerate: stripeline settings --markdown > docs/settings.md";
    }
  }
  // Every row of the reference is a key the reader knows, and each appears once.
  std::set<std::string> seen;
  for (const SettingInfo& s : settings()) {
    EXPECT_TRUE(seen.insert(s.toml_name()).second) << s.toml_name() << " is declared twice";
    EXPECT_NE(doc.find("| `" + s.key + "` |"), std::string::npos) << s.toml_name();
  }
}

// Each key of the schema, set to its own default, is read back (no unknown
// key, a default the owner's validation accepts), and a misspelt one is not.
TEST(Config, EverySchemaKeyParsesWithItsDefault) {
  for (const SettingInfo& s : settings()) {
    if (s.section == "security" && s.key == "curve") continue;  // true needs key files; its default is false anyway
    if (s.section == "head") {  // [[head]]: an array of tables, whose name is required
      const std::string head = "[[head]]\nname = \"h\"\n";
      if (s.key != "name") EXPECT_EQ(error_of(head + s.key + " = " + s.default_text + "\n"), "") << s.toml_name();
      EXPECT_NE(error_of(head + s.key + "_typo = " + s.default_text + "\n").find("head[0]." + s.key + "_typo: unknown key"), std::string::npos)
          << s.toml_name();
      continue;
    }
    const std::string text = "[" + s.section + "]\n" + s.key + " = " + s.default_text + "\n";
    EXPECT_EQ(error_of(text), "") << text;
    EXPECT_NE(error_of("[" + s.section + "]\n" + s.key + "_typo = " + s.default_text + "\n").find(s.section + "." + s.key + "_typo: unknown key"),
              std::string::npos)
        << s.toml_name();
  }
}

TEST(Config, EveryProcessingKeyHasAFlag) {
  int processing = 0;
  std::set<std::string> flags;
  for (const SettingInfo& s : settings()) {
    if (!s.flag.empty()) {
      std::istringstream names(s.flag);
      for (std::string name; std::getline(names, name, ',');) EXPECT_TRUE(flags.insert(name).second) << "flag " << name << " is declared twice";
    }
    if (s.section != "processing") continue;
    ++processing;
    EXPECT_FALSE(s.flag.empty()) << "processing." << s.key << " has no flag";
    EXPECT_FALSE(s.help.empty()) << s.toml_name();
    EXPECT_FALSE(s.owner.empty()) << s.toml_name();
  }
  EXPECT_GE(processing, 30);
  // ... and the commands that process offer each one (their --help comes from the schema).
  for (const char* command : {"run", "replay"}) {
    std::string help;
    ASSERT_EQ(test::run_cli(std::string(command) + " --help", &help), 0) << help;
    for (const SettingInfo& s : settings()) {
      if (s.section != "processing") continue;
      const std::string long_name = s.flag.substr(s.flag.rfind(',') + 1);
      EXPECT_NE(help.find(long_name), std::string::npos) << command << " has no " << long_name;
      EXPECT_NE(help.find("[processing] " + s.key), std::string::npos) << command << " --help does not name processing." << s.key;
    }
  }
}

// Flags go through the file's reader: its conversions, its checks, and a
// message that names the flag and the key.
TEST(Config, FlagsAreReadLikeKeys) {
  const auto at = [](const std::string& section, const std::string& key) -> const SettingInfo* {
    for (const SettingInfo& s : settings())
      if (s.section == section && s.key == key) return &s;
    return nullptr;
  };
  Config c = default_config();
  apply_setting_flags(c, {{at("processing", "threshold"), "77"}, {at("processing", "method"), "cog"}, {at("processing", "pixel_bits"), "12"},
                          {at("processing", "dark_frame"), "dark.png"}, {at("output", "ply_format"), "ascii"}});
  EXPECT_EQ(c.pipeline.chain.column.threshold, 77u);
  EXPECT_EQ(c.pipeline.chain.column.method, ColumnMethod::Cog);
  EXPECT_EQ(c.pipeline.chain.adaptive.pixel_bits, 12);
  EXPECT_EQ(c.pipeline.ambient.mode, AmbientMode::DarkFrame);  // --dark-frame implies ambient = "dark-frame"
  EXPECT_EQ(c.pipeline.ambient.dark_frame_path, "dark.png");
  EXPECT_EQ(c.output.ply_encoding, io::PlyEncoding::Ascii);
  EXPECT_EQ(c.synthetic.width, default_config().synthetic.width);  // untouched sections stay
  auto error = [&](std::vector<GivenSetting> given) {
    Config d = default_config();
    try {
      apply_setting_flags(d, given);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error({{at("processing", "threshold"), "abc"}}), "--threshold 'abc': expected an integer");
  EXPECT_EQ(error({{at("processing", "threshold"), "-1"}}), "--threshold: processing.threshold: value -1 does not fit");
  EXPECT_EQ(error({{at("processing", "method"), "gauss"}}),
            "--method: processing.method 'gauss' is not known (expected adaptive, cog, max, window, local-max or all)");
  EXPECT_EQ(error({{at("source", "raw_depth"), "12"}}), "--raw-depth: source.raw_depth: 12 is not supported (expected 8 or 16)");
  EXPECT_NE(error({{at("output", "heightmap"), "h.jpg"}}).find("--heightmap: output.heightmap = \"h.jpg\": unsupported extension '.jpg'"),
            std::string::npos);
  EXPECT_EQ(error({{at("processing", "buffers"), "0"}}), "--buffers: processing.buffers = 0 is out of range (expected 1..64)");
}

TEST(Config, MemoryBudgetsReadWithUnits) {
  const Config c = parse_config("[processing]\nmemory_budget = \"2G\"\ndevice_memory_budget = \"512M\"\n", "test.toml");
  EXPECT_EQ(c.pipeline.memory.host, std::uint64_t{2} << 30);
  EXPECT_EQ(c.pipeline.memory.device, std::uint64_t{512} << 20);
  EXPECT_EQ(default_config().pipeline.memory.host, 0u) << "auto";
  EXPECT_EQ(default_config().pipeline.batch_frames, 0) << "from the budget";
}
