#pragma once
// Sheet-of-light model: from an image point (u, v) in full-sensor pixels to a
// world point (X, Y, Z) in millimetres. docs/calibration.md says it in prose.
//
//   image point   u = ROI x-offset + column, v = ROI y-offset + sub-pixel row
//                 (pixel centres at integers; v = 0 is the centre of the
//                 sensor's top row), so a ROI change keeps the calibration;
//   normalise     x = (u - cu) / scale,  y = (v - cv) / scale
//   correct       Brown-Conrady in the CORRECTION direction (distorted ->
//                 undistorted, closed form, no iteration):
//                   r2 = x^2 + y^2,  q = k1 r2 + k2 r2^2 + k3 r2^3
//                   xu = x + x q + 2 p1 x y + p2 (r2 + 2 x^2)
//                   yu = y + y q + p1 (r2 + 2 y^2) + 2 p2 x y
//   homography    [X', Z', W'] = H [xu, yu, 1],  X = X'/W', Z = Z'/W'  (mm in
//                 the laser plane; X grows with the column, Z is height and
//                 grows toward the sensor). W' <= 0 is beyond the plane's
//                 horizon: no point.
//   motion        Y = frame index * y_step + y_offset, or
//                 encoder count * y_step + y_offset (y_from_encoder)
//   skew          (X, Y, Z)_world = X * ax + Z * az + (0, Y, 0), where ax and
//                 az are the laser plane's X and Z axes in world space (the
//                 columns of a fixed rotation; ax = (1,0,0), az = (0,0,1) when
//                 the plane is perpendicular to the motion).
//
// The per-axis affine LinearCalibration (core/calibration.h) is the same model
// with no distortion, cu = cv = 0, scale = 1 and an affine H (from_linear).
//
// Everything below is header-only and STRIPELINE_HD, templated on the scalar:
// the CPU evaluates in double, a CUDA kernel may take SheetOfLightMap<float>
// (normalised coordinates keep float's error below ~1e-5 mm, see
// tests/test_calibration.cpp) and the fit (calibration/) evaluates the very
// same functions with Ceres' dual numbers.
#include <cmath>
#include <cstdint>
#include <string>

#include "core/calibration.h"
#include "core/fixed_point.h"

namespace stripeline {

// A camera's region of interest on its full sensor, in pixels: image point
// (u, v) = (x + column, y + row). A recording's ROI comes from the config or
// the command line, a camera's from its read-back.
struct SensorRoi {
  int x = 0, y = 0, width = 0, height = 0;
  bool operator==(const SensorRoi&) const = default;
};

// A point of the laser plane, mm: X across, Z height (toward the sensor).
struct PlanePoint {
  double x = 0.0, z = 0.0;
};

namespace sol {

// Index of each coefficient in the 5-element distortion array.
enum DistortionIndex { kK1 = 0, kK2 = 1, kK3 = 2, kP1 = 3, kP2 = 4, kDistortionCount = 5 };

// Normalised distorted (x, y) -> normalised undistorted (xu, yu): the
// correction polynomial above. d = {k1, k2, k3, p1, p2}.
template <class T, class D>
STRIPELINE_HD void undistort(const D* d, T x, T y, T& xu, T& yu) {
  const T r2 = x * x + y * y;
  const T q = r2 * (d[kK1] + r2 * (d[kK2] + r2 * d[kK3]));
  const T xy = x * y;
  xu = x + x * q + T(2) * d[kP1] * xy + d[kP2] * (r2 + T(2) * x * x);
  yu = y + y * q + d[kP1] * (r2 + T(2) * y * y) + T(2) * d[kP2] * xy;
}

// Homography (row-major 3x3) applied to (x, y, 1). False (X, Z untouched)
// when W' <= 0: the point is beyond the laser plane's horizon.
template <class T, class H>
STRIPELINE_HD bool apply_homography(const H* h, T x, T y, T& X, T& Z) {
  const T w = h[6] * x + h[7] * y + h[8];
  if (!(w > T(0))) return false;
  X = (h[0] * x + h[1] * y + h[2]) / w;
  Z = (h[3] * x + h[4] * y + h[5]) / w;
  return true;
}

// Image (u, v) -> laser plane (X, Z). The fit calls this with dual numbers.
template <class T, class P>
STRIPELINE_HD bool image_to_plane(const P* h, const P* d, double cu, double cv, double inv_scale, T u, T v, T& X, T& Z) {
  const T x = (u - T(cu)) * T(inv_scale);
  const T y = (v - T(cv)) * T(inv_scale);
  T xu, yu;
  undistort(d, x, y, xu, yu);
  return apply_homography(h, xu, yu, X, Z);
}

}  // namespace sol

// The model as a kernel takes it: plain values, copyable to device memory.
template <class T>
struct SheetOfLightMap {
  T cu, cv, inv_scale;     // distortion centre (px), 1 / normalisation scale (1/px)
  T d[sol::kDistortionCount];  // k1, k2, k3, p1, p2 (correction direction)
  T h[9];                  // homography, row-major: normalised undistorted -> (X, Z) mm
  T ax[3], az[3];          // laser plane's X and Z axes in world space (skew)
  // Y = index * y_step + y_offset (index = frame, or encoder count). Always
  // double: one value per frame, and float would lose whole micrometres
  // after a million frames.
  double y_step, y_offset;
  int y_from_encoder;      // 1: index = encoder count, 0: global frame index
};

// (u, v) -> (X, Z) in the laser plane. False when the point is beyond the horizon.
template <class T>
STRIPELINE_HD bool image_to_plane(const SheetOfLightMap<T>& m, T u, T v, T& X, T& Z) {
  const T x = (u - m.cu) * m.inv_scale;
  const T y = (v - m.cv) * m.inv_scale;
  T xu, yu;
  sol::undistort(m.d, x, y, xu, yu);
  return sol::apply_homography(m.h, xu, yu, X, Z);
}

// Position along the motion axis for a frame (global index and encoder
// count), in double whatever T: evaluate it once per frame.
template <class T>
STRIPELINE_HD double motion_y(const SheetOfLightMap<T>& m, std::uint64_t frame_index, std::int64_t encoder) {
  const double index = m.y_from_encoder ? static_cast<double>(encoder) : static_cast<double>(frame_index);
  return index * m.y_step + m.y_offset;
}

// Laser-plane (X, Z) at motion position y -> world (X, Y, Z), right-handed.
template <class T>
STRIPELINE_HD void plane_to_world(const SheetOfLightMap<T>& m, T X, T Z, T y, T& wx, T& wy, T& wz) {
  wx = X * m.ax[0] + Z * m.az[0];
  wy = X * m.ax[1] + Z * m.az[1] + y;
  wz = X * m.ax[2] + Z * m.az[2];
}

// The whole mapping: (u, v) of a frame -> world (X, Y, Z).
template <class T>
STRIPELINE_HD bool image_to_world(const SheetOfLightMap<T>& m, T u, T v, std::uint64_t frame_index, std::int64_t encoder, T& wx,
                                  T& wy, T& wz) {
  T X, Z;
  if (!image_to_plane(m, u, v, X, Z)) return false;
  plane_to_world(m, X, Z, static_cast<T>(motion_y(m, frame_index, encoder)), wx, wy, wz);
  return true;
}

// The host's description of a calibration model (what the file holds),
// evaluated in double. Immutable once built.
struct SheetOfLightModel {
  enum class Kind { Linear, SheetOfLight };
  Kind kind = Kind::Linear;
  std::string unit = "px";          // "mm" once calibrated; "px" for the identity
  double cu = 0.0, cv = 0.0;        // distortion centre, full-sensor px
  double scale = 1.0;               // px per normalised unit (half the sensor width for a fit)
  double distortion[sol::kDistortionCount] = {0, 0, 0, 0, 0};
  double homography[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
  double y_step = 1.0, y_offset = 0.0;  // mm per frame (or per encoder tick), mm
  bool y_from_encoder = false;
  double skew_about_x_deg = 0.0;    // laser plane leaning along the motion (rotation about X)
  double skew_about_z_deg = 0.0;    // laser line not square to the motion in the conveyor plane (rotation about Z)

  template <class T>
  SheetOfLightMap<T> map() const {
    SheetOfLightMap<T> m{};
    m.cu = static_cast<T>(cu);
    m.cv = static_cast<T>(cv);
    m.inv_scale = static_cast<T>(1.0 / scale);
    for (int i = 0; i < sol::kDistortionCount; ++i) m.d[i] = static_cast<T>(distortion[i]);
    for (int i = 0; i < 9; ++i) m.h[i] = static_cast<T>(homography[i]);
    // Skew rotation R = Rz(gamma) * Rx(alpha); ax, az are its first and third columns.
    constexpr double kDeg = 3.14159265358979323846 / 180.0;
    const double ca = std::cos(skew_about_x_deg * kDeg), sa = std::sin(skew_about_x_deg * kDeg);
    const double cg = std::cos(skew_about_z_deg * kDeg), sg = std::sin(skew_about_z_deg * kDeg);
    const double ax[3] = {cg, sg, 0.0};
    const double az[3] = {sa * sg, -sa * cg, ca};
    for (int i = 0; i < 3; ++i) {
      m.ax[i] = static_cast<T>(ax[i]);
      m.az[i] = static_cast<T>(az[i]);
    }
    m.y_step = y_step;
    m.y_offset = y_offset;
    m.y_from_encoder = y_from_encoder ? 1 : 0;
    return m;
  }

  // (u, v) -> (X, Z), double precision. False beyond the horizon.
  bool image_to_plane(double u, double v, double& X, double& Z) const {
    return sol::image_to_plane(homography, distortion, cu, cv, 1.0 / scale, u, v, X, Z);
  }
};

// The existing per-axis affine calibration as the simplest model: no
// distortion, raw pixel coordinates (cu = cv = 0, scale = 1), an affine H.
// LinearCalibration maps the column and the row within the frame; with ROI
// offsets 0 those are u and v. Disabled -> the identity in pixels.
inline SheetOfLightModel from_linear(const LinearCalibration& c) {
  SheetOfLightModel m;
  m.kind = SheetOfLightModel::Kind::Linear;
  m.unit = c.unit();
  if (c.enabled) {
    const double h[9] = {c.x_scale, 0.0, c.x_offset, 0.0, c.z_scale, c.z_offset, 0.0, 0.0, 1.0};
    for (int i = 0; i < 9; ++i) m.homography[i] = h[i];
    m.y_step = c.y_scale;
    m.y_offset = c.y_offset;
    m.y_from_encoder = c.y_from_encoder;
  } else {
    m.y_step = 1.0;
    m.y_offset = 0.0;
    m.y_from_encoder = false;
  }
  return m;
}

}  // namespace stripeline
