#pragma once
// The fit's residuals (calibration/fit.cpp), in a header so that the tests can
// check the analytic derivatives against Ceres' dual numbers.
#include <ceres/ceres.h>

#include <cmath>

#include "core/sheet_of_light.h"

namespace stripeline::fit_detail {

// A corner (or a whole frame's end point) seen at normalised image point q is
// the target's vertex t placed by the pose: (dx, dz) in mm.
struct CornerResidual {
  double qx, qy, tx, tz, weight;
  template <class T>
  bool operator()(const T* pose, const T* h, T* r) const {
    T X, Z;
    if (!sol::apply_homography(h, T(qx), T(qy), X, Z)) return false;
    const T c = cos(pose[2]), s = sin(pose[2]);
    r[0] = T(weight) * (X - (pose[0] + c * tx - s * tz));
    r[1] = T(weight) * (Z - (pose[1] + s * tx + c * tz));
    return true;
  }
};

// An image point on a target segment: its distance to the placed segment's
// line, times `weight` (pixels along the column per mm of that distance), is
// the px-equivalent residual.
struct PointResidual {
  double u, v, cu, cv, inv_scale;
  double ax, az, dx, dz;  // segment start and unit direction, target mm
  double weight;
  template <class T>
  bool operator()(const T* pose, const T* h, const T* d, T* r) const {
    T X, Z;
    if (!sol::image_to_plane(h, d, cu, cv, inv_scale, T(u), T(v), X, Z)) return false;
    const T c = cos(pose[2]), s = sin(pose[2]);
    const T wx = pose[0] + c * ax - s * az, wz = pose[1] + s * ax + c * az;
    const T ex = c * dx - s * dz, ez = s * dx + c * dz;
    r[0] = T(weight) * ((Z - wz) * ex - (X - wx) * ez);
    return true;
  }
};

// PointResidual with analytic derivatives (the same value, ~20x faster than
// dual numbers; tests/test_calibration.cpp checks one against the other).
// With x, y the normalised point, (xu, yu) = undistort(x, y), X = A/W,
// Z = B/W, e the placed segment's direction and p the pose's translation:
//   r = w ((Z - wz) ex - (X - wx) ez)
//   dr/dX = -w ez, dr/dZ = w ex, dr/dpose = w (ez, -ex, -(ex (X - px) + ez (Z - pz)))
//   dX/dh = (xu, yu, 1, 0, 0, 0, -X xu, -X yu, -X) / W (and Z likewise)
//   dxu/dd = (x r2, x r2^2, x r2^3, 2 x y, r2 + 2 x^2), dyu/dd = (y r2, y r2^2, y r2^3, r2 + 2 y^2, 2 x y)
class PointCost final : public ceres::SizedCostFunction<1, 3, 9, 5> {
 public:
  explicit PointCost(const PointResidual& p) : p_(p) {}
  bool Evaluate(double const* const* params, double* residual, double** jac) const override {
    const double* pose = params[0];
    const double* h = params[1];
    const double* d = params[2];
    const double x = (p_.u - p_.cu) * p_.inv_scale, y = (p_.v - p_.cv) * p_.inv_scale;
    double xu, yu;
    sol::undistort(d, x, y, xu, yu);
    const double w = h[6] * xu + h[7] * yu + h[8];
    if (!(w > 0)) return false;
    const double X = (h[0] * xu + h[1] * yu + h[2]) / w, Z = (h[3] * xu + h[4] * yu + h[5]) / w;
    const double c = std::cos(pose[2]), s = std::sin(pose[2]);
    const double wx = pose[0] + c * p_.ax - s * p_.az, wz = pose[1] + s * p_.ax + c * p_.az;
    const double ex = c * p_.dx - s * p_.dz, ez = s * p_.dx + c * p_.dz;
    const double k = p_.weight;
    residual[0] = k * ((Z - wz) * ex - (X - wx) * ez);
    if (!jac) return true;
    const double rX = -k * ez, rZ = k * ex;
    if (jac[0]) {
      jac[0][0] = k * ez;
      jac[0][1] = -k * ex;
      jac[0][2] = -k * (ex * (X - pose[0]) + ez * (Z - pose[1]));
    }
    if (jac[1]) {
      const double a = rX / w, b = rZ / w;
      jac[1][0] = a * xu;
      jac[1][1] = a * yu;
      jac[1][2] = a;
      jac[1][3] = b * xu;
      jac[1][4] = b * yu;
      jac[1][5] = b;
      const double m = -(rX * X + rZ * Z) / w;
      jac[1][6] = m * xu;
      jac[1][7] = m * yu;
      jac[1][8] = m;
    }
    if (jac[2]) {
      // dr/dxu and dr/dyu through the homography.
      const double rxu = (rX * (h[0] - X * h[6]) + rZ * (h[3] - Z * h[6])) / w;
      const double ryu = (rX * (h[1] - X * h[7]) + rZ * (h[4] - Z * h[7])) / w;
      const double r2 = x * x + y * y;
      const double t1 = r2, t2 = r2 * r2, t3 = r2 * r2 * r2;
      jac[2][sol::kK1] = rxu * x * t1 + ryu * y * t1;
      jac[2][sol::kK2] = rxu * x * t2 + ryu * y * t2;
      jac[2][sol::kK3] = rxu * x * t3 + ryu * y * t3;
      jac[2][sol::kP1] = rxu * 2.0 * x * y + ryu * (r2 + 2.0 * y * y);
      jac[2][sol::kP2] = rxu * (r2 + 2.0 * x * x) + ryu * 2.0 * x * y;
    }
    return true;
  }

 private:
  PointResidual p_;
};

}  // namespace stripeline::fit_detail
