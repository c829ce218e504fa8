#pragma once
// `stripeline synth --scene target|<parts scene>`: recordings of the
// simulated sheet-of-light sensor (acquisition/triangulation_scanner.h) with
// their truth as JSON, for calibrate -> replay --calibration end to end
// (docs/calibration.md, "The synthetic triangulation sensor").
#include <cstdint>
#include <string>

namespace stripeline::tools {

struct TriangulationSynthOptions {
  std::string scene;              // target, gauge, sphere-ramp
  std::string out, truth;         // recording; truth JSON ("" = none)
  std::string target;             // --target FILE (scene target)
  std::string roi = "0,428,2048,256";  // X,Y,W,H on the 2048x1088 sensor
  std::uint64_t frames = 0, seed = 1;  // frames 0: the scene's own (parts_preset(), target: 40)
  double out_of_view = 0.0, corrupted = 0.0;  // target: fractions of the frames
};

// Writes the recording (and truth); InputError for bad options. Returns 0.
int synth_triangulation(const TriangulationSynthOptions& o);

}  // namespace stripeline::tools
