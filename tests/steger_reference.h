#pragma once
// An independent reference for stripe centres on real images: Steger's
// curvilinear-structure detector (C. Steger, "An unbiased detector of
// curvilinear structures", IEEE PAMI 20(2), 1998), written here from the
// mathematics in double precision, sharing no code with kernels/.
//
// The image is convolved with Gaussian derivative kernels of scale sigma
// (pixel-integrated: each tap is the kernel's integral over the pixel, so a
// constant image gives exactly zero derivatives). At every pixel the Hessian
// of the smoothed image is diagonalised; a bright line has a strongly negative
// eigenvalue across it (the ridge strength -lambda) with eigenvector n, and
// its centre lies at t*n from the pixel centre, t = -(n.grad) / (n^T H n),
// when |t n_x| and |t n_y| are both at most `pixel_boundary` (a line point).
//
// Line points are linked into lines as Steger's detector does (section 3.3
// of the paper): from the strongest unlinked point at least
// `min_strength_noise` times its column's robust noise of -r_yy (1.4826 x
// the median absolute deviation) the line is followed both ways, each step
// to one of the three 8-neighbours in the line's direction: the unlinked line
// point (at least `link_strength_noise` x the noise and `min_strength`) with
// the smallest distance between the two centres plus angle between the two
// directions. A line ends where no neighbour is a line point.
//
// Per column the stripe is the heaviest line (the largest sum of strengths,
// at least `min_line_length` points) that crosses it: a line, not the
// strongest ridge of the column, so a bright speck or a stone never outranks
// the laser line. Its centre in the column is moved along the line onto the
// column, row y + t / n_y. A column has "no stripe" (NaN) where no such line
// crosses it, and "a stripe without a centre" (+infinity) where the line
// crosses it steeper than 60 degrees only (|n_y| < 0.5: too obliquely to give
// a centre); the scoring leaves those columns out.
//
// tests/test_steger_reference.cpp checks it against the synthetic scanner's
// truth.
#include <cstdint>
#include <vector>

namespace stripeline::test {

struct StegerOptions {
  double sigma = 2.0;               // Gaussian scale, pixels
  double min_strength_noise = 5.0;  // upper threshold: a line starts from a point this x its column's noise of -r_yy
  double link_strength_noise = 1.0; // lower threshold: a line point can continue a line from this x the noise
  double min_strength = 0.5;        // ... and at least this (grey levels per pixel^2)
  double pixel_boundary = 0.6;      // a pixel is a line point when its centre lies within this of it along x and y (Steger's own code uses 0.6: with 0.5 a centre on a pixel border can belong to neither)
  int min_line_length = 10;         // a linked line shorter than this (points) is texture, not a stripe
};

// Reference centre row of every column (NaN where there is no stripe, +inf
// where its line crosses too steeply for a centre) of a grey image `pixels` (row-major, width x height).
std::vector<double> steger_centres(const std::vector<double>& pixels, int width, int height, const StegerOptions& options = {});

// An extraction (position per column, NaN = none) scored against the reference.
struct ReferenceScore {
  int columns = 0;
  int reference = 0;   // columns where the reference finds a stripe
  int detected = 0;    // columns where the extraction finds one
  int both = 0;
  int over_3px = 0;    // of `both`, more than 3 px apart
  int extra = 0;       // extraction finds one, the reference none
  int steep = 0;       // the reference's line crosses the column steeply: a stripe without a centre, not scored
  double median = 0.0; // median |distance| over `both`, pixels
  double over_3px_percent() const { return both ? 100.0 * over_3px / both : 0.0; }
  double extra_percent() const { return columns ? 100.0 * extra / columns : 0.0; }
  double missed_percent() const { return reference ? 100.0 * (reference - both) / reference : 0.0; }
};

ReferenceScore score_against_reference(const std::vector<double>& extracted, const std::vector<double>& reference);

}  // namespace stripeline::test
