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
// when |t n_x| and |t n_y| are both at most 1/2. A centre found in column x
// is moved along the line (perpendicular to n) onto that column: row y + t/n_y.
//
// Per column the strongest ridge point is the candidate centre. Strengths are
// thresholded with hysteresis and linking, as Steger's detector does: a
// candidate at least `min_strength_noise` times the column's robust noise of
// -r_yy (1.4826 x the median absolute deviation) is a line point; one between
// `link_strength_noise` and that is a line point only when a neighbouring
// column holds a line point within `link_rows` rows (grown until stable).
// A column has "no stripe" otherwise, below `min_strength`, or when the line
// is steeper than 60 degrees there (|n_y| < 0.5: the column crosses it too
// obliquely to give a centre).
#include <cstdint>
#include <vector>

namespace stripeline::test {

struct StegerOptions {
  double sigma = 2.0;               // Gaussian scale, pixels
  double min_strength_noise = 5.0;  // upper threshold: a line point by itself at this x the column's noise of -r_yy
  double link_strength_noise = 1.0; // lower threshold: a line point if linked to an accepted neighbour column
  double link_rows = 2.0;           // linking: at most this many rows from the neighbour column's centre
  double min_strength = 0.5;        // ... and at least this (grey levels per pixel^2)
};

// Reference centre row of every column (NaN where there is no stripe) of a
// grey image `pixels` (row-major, width x height).
std::vector<double> steger_centres(const std::vector<double>& pixels, int width, int height, const StegerOptions& options = {});

// An extraction (position per column, NaN = none) scored against the reference.
struct ReferenceScore {
  int columns = 0;
  int reference = 0;   // columns where the reference finds a stripe
  int detected = 0;    // columns where the extraction finds one
  int both = 0;
  int over_3px = 0;    // of `both`, more than 3 px apart
  int extra = 0;       // extraction finds one, the reference none
  double median = 0.0; // median |distance| over `both`, pixels
  double over_3px_percent() const { return both ? 100.0 * over_3px / both : 0.0; }
  double extra_percent() const { return columns ? 100.0 * extra / columns : 0.0; }
  double missed_percent() const { return reference ? 100.0 * (reference - both) / reference : 0.0; }
};

ReferenceScore score_against_reference(const std::vector<double>& extracted, const std::vector<double>& reference);

}  // namespace stripeline::test
